package k8s

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// envSetting is one SNOWFLAKE_* variable a manifest sets for snowflaked.
type envSetting struct {
	file, name, value string
	line              int
	// why is the comment beside it: the comment lines right above it, or a
	// comment at the end of its line(s).
	why string
}

// TestOverridesSayWhy: the manifests run the daemon with its defaults. Every
// SNOWFLAKE_* variable that the Deployment or the compose file's worker sets
// to something other than the flag's default (read from snowflaked --help)
// has a comment beside it saying why; a default changed in the code without
// the manifests following then fails here instead of shipping silently
// (SNOWFLAKE_HORIZON: 5s outlived the default's move to 40s that way).
func TestOverridesSayWhy(t *testing.T) {
	_, flags := daemonFlags(t)
	var all []envSetting
	all = append(all, k8sEnv(t, "snowflaked-deployment.yaml")...)
	all = append(all, composeEnv(t, "../../docker-compose.yml", "worker")...)
	if len(all) < 5 {
		t.Fatalf("found %d SNOWFLAKE_* settings: the parsing below no longer matches the files", len(all))
	}
	overrides := 0
	for _, s := range all {
		flag := strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(s.name, "SNOWFLAKE_")), "_", "-")
		def, ok := flags[flag]
		if !ok {
			t.Errorf("%s:%d: %s names no snowflaked flag (--%s)", s.file, s.line, s.name, flag)
			continue
		}
		if sameValue(s.value, def) {
			continue
		}
		overrides++
		if strings.TrimSpace(s.why) == "" {
			t.Errorf("%s:%d: %s=%q overrides the default of --%s (%q) with no comment beside it saying why", s.file, s.line, s.name, s.value, flag, def)
		}
	}
	t.Logf("%d settings, %d overrides of a default, each with its reason", len(all), overrides)
}

// sameValue: a setting equal to the default as the flag reads it (an empty
// default is the zero value; durations compare as durations).
func sameValue(v, def string) bool {
	if v == def {
		return true
	}
	if def == "" {
		return v == "false" || v == "0" || v == "0s"
	}
	dv, err1 := time.ParseDuration(v)
	dd, err2 := time.ParseDuration(def)
	return err1 == nil && err2 == nil && dv == dd
}

var (
	k8sName  = regexp.MustCompile(`^\s*- name: (SNOWFLAKE_\w+)\s*(#.*)?$`)
	k8sValue = regexp.MustCompile(`^\s*value: ("[^"]*"|'[^']*'|[^#]*?)\s*(#.*)?$`)
)

// k8sEnv reads the `- name: SNOWFLAKE_X` / `value: v` pairs of a manifest
// with their comments (YAML decoders drop comments, so this reads text).
func k8sEnv(t *testing.T, file string) []envSetting {
	t.Helper()
	lines := readLines(t, file)
	var out []envSetting
	for i, l := range lines {
		m := k8sName.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		s := envSetting{file: file, name: m[1], line: i + 1, why: commentAbove(lines, i) + m[2]}
		if i+1 < len(lines) {
			if v := k8sValue.FindStringSubmatch(lines[i+1]); v != nil {
				s.value = strings.Trim(v[1], `"'`)
				s.why += v[2]
			}
		}
		out = append(out, s)
	}
	return out
}

var (
	composeService = regexp.MustCompile(`^  ([a-z0-9_-]+):\s*$`)
	composeEnvLine = regexp.MustCompile(`^\s+(SNOWFLAKE_\w+): ("[^"]*"|'[^']*'|[^#]*?)\s*(#.*)?$`)
	// composeFallback is ${VAR:-value}: what the worker gets unless the
	// caller (the integration suite) sets VAR.
	composeFallback = regexp.MustCompile(`^\$\{\w+:-(.*)\}$`)
)

// composeEnv reads the SNOWFLAKE_* variables of one service of a compose
// file, with the value used when the caller sets nothing.
func composeEnv(t *testing.T, file, service string) []envSetting {
	t.Helper()
	lines := readLines(t, file)
	var out []envSetting
	in := false
	for i, l := range lines {
		if m := composeService.FindStringSubmatch(l); m != nil {
			in = m[1] == service
			continue
		}
		if !in {
			continue
		}
		m := composeEnvLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		v := strings.Trim(m[2], `"'`)
		if f := composeFallback.FindStringSubmatch(v); f != nil {
			v = f[1]
		}
		out = append(out, envSetting{file: file, name: m[1], value: v, line: i + 1, why: commentAbove(lines, i) + m[3]})
	}
	if len(out) == 0 {
		t.Fatalf("%s: service %s sets no SNOWFLAKE_* variable", file, service)
	}
	return out
}

// commentAbove is the block of comment lines right above line i.
func commentAbove(lines []string, i int) string {
	var c []string
	for j := i - 1; j >= 0; j-- {
		l := strings.TrimSpace(lines[j])
		if !strings.HasPrefix(l, "#") {
			break
		}
		c = append([]string{strings.TrimSpace(strings.TrimLeft(l, "#"))}, c...)
	}
	return strings.Join(c, " ")
}

func readLines(t *testing.T, file string) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(string(b), "\n")
}
