//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
)

// The suite's Prometheus runs the production prometheus.yml and rules.yml
// (deploy/prometheus/) with only their durations shortened, so that an alert
// fires and resolves within a scenario: the production files stay as they
// are, and any rule added there is loaded here too.
const (
	promInterval = time.Second      // scrape, rule evaluation and DNS refresh
	alertFor     = 2 * time.Second  // every alert's `for:`
	alertWindow  = 10 * time.Second // every range selector ([5m] in rates and increases)
	promUpBound  = 30 * time.Second // for Prometheus to scrape every worker container
)

// promImage is the Prometheus image: PROMETHEUS_IMAGE (e.g. the official
// prom/prometheus) or the one deploy/build-images.sh makes.
func promImage() string { return envOr("PROMETHEUS_IMAGE", "snowfleet/prometheus:latest") }

// Prom is the stack's Prometheus, asked through its HTTP API.
type Prom struct {
	base string // http://127.0.0.1:<published 9090>
	st   *Stack
	hc   *http.Client
}

// StartPrometheus writes the shortened copies of the production files into
// dir, starts the compose file's prometheus service on them (PROMETHEUS_CONFIG
// and PROMETHEUS_RULES), waits until it is ready and checks that it loaded
// every alert of the production rules.
func StartPrometheus(ctx context.Context, st *Stack, dir string) (*Prom, error) {
	src := filepath.Join(st.repo, "deploy", "prometheus")
	cfg, err := shorten(filepath.Join(src, "prometheus.yml"), filepath.Join(dir, "prometheus.yml"), []rewrite{
		{`(?m)^(\s*scrape_interval:\s*)\S+`, promDur(promInterval)},
		{`(?m)^(\s*evaluation_interval:\s*)\S+`, promDur(promInterval)},
		{`(?m)^(\s*refresh_interval:\s*)\S+`, promDur(promInterval)},
	})
	if err != nil {
		return nil, err
	}
	rules, err := shorten(filepath.Join(src, "rules.yml"), filepath.Join(dir, "rules.yml"), []rewrite{
		{`(?m)^(\s*for:\s*)\S+`, promDur(alertFor)},
		{`(\[)[0-9]+[smhdwy]+(\])`, promDur(alertWindow)},
	})
	if err != nil {
		return nil, err
	}
	// Every later compose command names the same files, so that none sees
	// the service's configuration change.
	st.env = append(st.env, "PROMETHEUS_IMAGE="+promImage(), "PROMETHEUS_CONFIG="+cfg, "PROMETHEUS_RULES="+rules)
	if _, err := st.Compose(ctx, "up", "-d", "--no-deps", "prometheus"); err != nil {
		return nil, err
	}
	cs, err := st.Containers(ctx, "prometheus")
	if err != nil {
		return nil, err
	}
	if len(cs) != 1 || cs[0].Addr("9090") == "" {
		return nil, fmt.Errorf("prometheus: want one container with port 9090 published, have %d", len(cs))
	}
	p := &Prom{base: "http://" + cs[0].Addr("9090"), st: st, hc: &http.Client{Timeout: 5 * time.Second}}
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := p.hc.Get(p.base + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
			err = fmt.Errorf("/-/ready: %s", resp.Status)
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("prometheus not ready after 60 s: %w\n%s", err, st.Logs(ctx, 30, "prometheus"))
		}
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return nil, err
		}
	}
	return p, p.checkRules(ctx, filepath.Join(src, "rules.yml"))
}

// rewrite replaces what re matches with its first group, value and its
// second group (if any).
type rewrite struct{ re, value string }

// shorten copies src to dst with every rewrite applied; a rewrite that
// matches nothing is an error (the production file changed shape, and the
// suite would run it unshortened).
func shorten(src, dst string, rws []rewrite) (string, error) {
	b, err := os.ReadFile(src)
	if err != nil {
		return "", err
	}
	s := string(b)
	for _, rw := range rws {
		re := regexp.MustCompile(rw.re)
		if !re.MatchString(s) {
			return "", fmt.Errorf("%s: nothing matches %s to shorten", src, rw.re)
		}
		s = re.ReplaceAllString(s, "${1}"+rw.value+"${2}")
	}
	// World-readable: the official image and ours run as nobody.
	if err := os.WriteFile(dst, []byte(s), 0o644); err != nil {
		return "", err
	}
	return dst, os.Chmod(dst, 0o644)
}

// promDur spells d as Prometheus does (1s, 10s, 2m).
func promDur(d time.Duration) string {
	if d%time.Minute == 0 {
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return fmt.Sprintf("%ds", d/time.Second)
}

// checkRules fails unless Prometheus loaded every alert named in the
// production rules file, healthy and with the shortened `for:` where one is set.
func (p *Prom) checkRules(ctx context.Context, prodRules string) error {
	b, err := os.ReadFile(prodRules)
	if err != nil {
		return err
	}
	var want []string
	for _, m := range regexp.MustCompile(`(?m)^\s*-\s*alert:\s*(\S+)`).FindAllStringSubmatch(string(b), -1) {
		want = append(want, m[1])
	}
	var data struct {
		Groups []struct {
			Rules []struct {
				Name      string  `json:"name"`
				Duration  float64 `json:"duration"`
				Health    string  `json:"health"`
				LastError string  `json:"lastError"`
			} `json:"rules"`
		} `json:"groups"`
	}
	if err := p.get(ctx, "/api/v1/rules", url.Values{"type": {"alert"}}, &data); err != nil {
		return err
	}
	loaded := map[string]bool{}
	for _, g := range data.Groups {
		for _, r := range g.Rules {
			loaded[r.Name] = true
			if r.Duration != 0 && r.Duration != alertFor.Seconds() {
				return fmt.Errorf("prometheus loaded %s with for %gs, not the suite's %v", r.Name, r.Duration, alertFor)
			}
			if r.Health == "err" {
				return fmt.Errorf("prometheus: rule %s fails: %s", r.Name, r.LastError)
			}
		}
	}
	for _, n := range want {
		if !loaded[n] {
			return fmt.Errorf("prometheus did not load the alert %s (loaded: %v)", n, slices.Sorted(maps.Keys(loaded)))
		}
	}
	if len(want) == 0 {
		return fmt.Errorf("%s names no alert", prodRules)
	}
	return nil
}

// get fetches an API path and decodes its data field.
func (p *Prom) get(ctx context.Context, path string, q url.Values, data any) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	u := p.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := p.hc.Do(req)
	if err != nil {
		return fmt.Errorf("prometheus %s: %w", path, err)
	}
	defer resp.Body.Close()
	var env struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		return fmt.Errorf("prometheus %s: %s: %w", path, resp.Status, err)
	}
	if env.Status != "success" {
		return fmt.Errorf("prometheus %s: %s: %s", path, resp.Status, env.Error)
	}
	return json.Unmarshal(env.Data, data)
}

// sampleValue is one series of an instant vector: its labels and value.
type sampleValue struct {
	Metric map[string]string
	Value  string
}

// Query runs an instant query that returns a vector.
func (p *Prom) Query(ctx context.Context, q string) ([]sampleValue, error) {
	var data struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		} `json:"result"`
	}
	if err := p.get(ctx, "/api/v1/query", url.Values{"query": {q}}, &data); err != nil {
		return nil, err
	}
	if data.ResultType != "vector" {
		return nil, fmt.Errorf("prometheus: %s gave a %s, not a vector", q, data.ResultType)
	}
	out := make([]sampleValue, 0, len(data.Result))
	for _, r := range data.Result {
		v, _ := r.Value[1].(string)
		out = append(out, sampleValue{Metric: r.Metric, Value: v})
	}
	return out, nil
}

// Alert is one active alert as /api/v1/alerts lists it: pending or firing
// (resolved ones are not listed).
type Alert struct {
	Labels   map[string]string `json:"labels"`
	State    string            `json:"state"`
	ActiveAt time.Time         `json:"activeAt"`
	Value    string            `json:"value"`
}

// Alerts lists the active alerts.
func (p *Prom) Alerts(ctx context.Context) ([]Alert, error) {
	var data struct {
		Alerts []Alert `json:"alerts"`
	}
	err := p.get(ctx, "/api/v1/alerts", nil, &data)
	return data.Alerts, err
}

// AlertsOn lists the active alerts of those names (all when none) on a
// target instance.
func (p *Prom) AlertsOn(ctx context.Context, instance string, names ...string) ([]Alert, error) {
	all, err := p.Alerts(ctx)
	var out []Alert
	for _, a := range all {
		if a.Labels["instance"] == instance && (len(names) == 0 || slices.Contains(names, a.Labels["alertname"])) {
			out = append(out, a)
		}
	}
	return out, err
}

// Instance is the target Prometheus scrapes for a worker container: its
// address on the front network (where dns_sd_configs finds it), port 7610.
func (p *Prom) Instance(ctx context.Context, c Container) (string, error) {
	ips, err := p.frontIPs(ctx, []string{c.ID})
	if err != nil {
		return "", err
	}
	if ips[c.ID] == "" {
		return "", fmt.Errorf("%s has no address on %s", c.Short(), p.st.Network("front"))
	}
	return ips[c.ID] + ":7610", nil
}

func (p *Prom) frontIPs(ctx context.Context, ids []string) (map[string]string, error) {
	out, err := docker(ctx, append([]string{"inspect", "-f", "{{.Id}} {{json .NetworkSettings.Networks}}"}, ids...)...)
	if err != nil {
		return nil, err
	}
	ips := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		id, js, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok {
			continue
		}
		var nets map[string]struct{ IPAddress string }
		if err := json.Unmarshal([]byte(js), &nets); err != nil {
			return nil, fmt.Errorf("docker inspect networks: %w", err)
		}
		ips[id] = nets[p.st.Network("front")].IPAddress
	}
	return ips, nil
}

// WaitAllUp waits until Prometheus's targets of job snowflaked are exactly
// the running worker containers, each with up == 1, and says so; the error
// says what Prometheus saw against what runs.
func (p *Prom) WaitAllUp(ctx context.Context, limit time.Duration) (string, error) {
	deadline := time.Now().Add(limit)
	start := time.Now()
	for {
		missing, extra, down, n, err := p.upDiff(ctx)
		if err == nil && len(missing)+len(extra)+len(down) == 0 {
			return fmt.Sprintf("Prometheus: %d of %d workers up (%.1f s)", n, n, time.Since(start).Seconds()), nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				return "", err
			}
			return "", fmt.Errorf("Prometheus after %v, of %d running workers: not targets %v; up 0 %v; targets that are no running worker %v",
				limit, n, missing, down, extra)
		}
		if err := sleep(ctx, 250*time.Millisecond); err != nil {
			return "", err
		}
	}
}

// upDiff compares up{job="snowflaked"} with the running worker containers.
func (p *Prom) upDiff(ctx context.Context) (missing, extra, down []string, running int, err error) {
	ws, err := p.st.Workers(ctx)
	if err != nil {
		return nil, nil, nil, 0, err
	}
	var ids []string
	for _, w := range ws {
		if w.Running && !w.Paused {
			ids = append(ids, w.ID)
		}
	}
	want := map[string]string{} // instance -> worker_N
	if len(ids) > 0 {
		ips, err := p.frontIPs(ctx, ids)
		if err != nil {
			return nil, nil, nil, 0, err
		}
		for _, w := range ws {
			if ip := ips[w.ID]; ip != "" {
				want[ip+":7610"] = w.Short()
			}
		}
	}
	up, err := p.Query(ctx, `up{job="snowflaked"}`)
	if err != nil {
		return nil, nil, nil, len(ids), err
	}
	got := map[string]bool{}
	for _, s := range up {
		inst := s.Metric["instance"]
		got[inst] = true
		switch name, ok := want[inst]; {
		case !ok:
			extra = append(extra, inst+" up "+s.Value)
		case s.Value != "1":
			down = append(down, name+" ("+inst+")")
		}
	}
	for inst, name := range want {
		if !got[inst] {
			missing = append(missing, name+" ("+inst+")")
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	sort.Strings(down)
	return missing, extra, down, len(ids), nil
}
