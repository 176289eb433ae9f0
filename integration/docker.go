//go:build integration

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// cmdTimeout bounds one docker or compose command.
const cmdTimeout = 2 * time.Minute

// run executes a command and returns its trimmed stdout; the error carries
// stderr.
func run(ctx context.Context, env []string, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, cmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return strings.TrimSpace(out.String()), nil
}

func docker(ctx context.Context, args ...string) (string, error) {
	return run(ctx, nil, "docker", args...)
}

// composeCommand is docker-compose v1 when installed, else the plugin.
func composeCommand() ([]string, error) {
	if _, err := exec.LookPath("docker-compose"); err == nil {
		return []string{"docker-compose"}, nil
	}
	if err := exec.Command("docker", "compose", "version").Run(); err == nil {
		return []string{"docker", "compose"}, nil
	}
	return nil, fmt.Errorf("neither docker-compose nor the docker compose plugin is installed")
}

// Container is what the suite needs of one container, from docker inspect.
type Container struct {
	ID      string
	Service string
	Number  int
	Running bool
	Paused  bool
	ports   map[string]int // "7609/tcp" -> host port on 127.0.0.1
}

// Port is the host port published for the container port ("7609"), or 0.
func (c Container) Port(p string) int { return c.ports[p+"/tcp"] }

// Addr is 127.0.0.1:<published port>, or "" when not published.
func (c Container) Addr(p string) string {
	if c.Port(p) == 0 {
		return ""
	}
	return "127.0.0.1:" + strconv.Itoa(c.Port(p))
}

// Short is the container's name without the project prefix, e.g. worker_2.
func (c Container) Short() string { return c.Service + "_" + strconv.Itoa(c.Number) }

type inspectJSON struct {
	ID     string `json:"Id"`
	Config struct {
		Labels map[string]string
	}
	State struct {
		Running bool
		Paused  bool
	}
	NetworkSettings struct {
		Ports map[string][]struct{ HostIP, HostPort string }
	}
}

func inspect(ctx context.Context, ids []string) ([]Container, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	out, err := docker(ctx, append([]string{"inspect"}, ids...)...)
	if err != nil {
		return nil, err
	}
	var raw []inspectJSON
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		return nil, fmt.Errorf("docker inspect: %w", err)
	}
	cs := make([]Container, 0, len(raw))
	for _, r := range raw {
		c := Container{
			ID: r.ID, Service: r.Config.Labels["com.docker.compose.service"],
			Running: r.State.Running, Paused: r.State.Paused, ports: map[string]int{},
		}
		c.Number, _ = strconv.Atoi(r.Config.Labels["com.docker.compose.container-number"])
		for p, bs := range r.NetworkSettings.Ports {
			for _, b := range bs {
				if n, err := strconv.Atoi(b.HostPort); err == nil && (b.HostIP == "127.0.0.1" || c.ports[p] == 0) {
					c.ports[p] = n
				}
			}
		}
		cs = append(cs, c)
	}
	return cs, nil
}
