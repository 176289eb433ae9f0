//go:build integration

package integration

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// leaseAlerts are the alerts of a worker that is up but lost its lease or
// cannot serve (deploy/prometheus/rules.yml).
var leaseAlerts = []string{"SnowflakeWorkerNotReady", "SnowflakeLeaseLost"}

// alertWatch follows the alerts Prometheus raises on one worker's target
// during a scenario, and remembers every alert it saw active there.
type alertWatch struct {
	e    env
	who  string // worker_N
	inst string // its target, <front address>:7610
	seen map[string]string
}

// watchAlerts finds c's target and waits until none of names is active on
// it: an alert still active from an earlier scenario would make "fires"
// prove nothing.
func (e env) watchAlerts(c Container, names ...string) *alertWatch {
	e.t.Helper()
	inst, err := e.prom.Instance(e.ctx, c)
	e.must(err, "Prometheus target of "+c.Short())
	w := &alertWatch{e: e, who: c.Short(), inst: inst, seen: map[string]string{}}
	start := time.Now()
	for {
		as, err := e.prom.AlertsOn(e.ctx, inst, names...)
		if err == nil && len(as) == 0 {
			return w
		}
		if time.Since(start) > alertWindow+alertFor+20*time.Second {
			e.t.Fatalf("before the fault, Prometheus still reports on %s (%s): %s (%v)", c.Short(), inst, describe(as), err)
		}
		e.sleep(250 * time.Millisecond)
	}
}

// poll reads the alerts on the target, noting every one seen active.
func (w *alertWatch) poll() ([]Alert, error) {
	as, err := w.e.prom.AlertsOn(w.e.ctx, w.inst)
	for _, a := range as {
		n := a.Labels["alertname"]
		if w.seen[n] != "firing" {
			w.seen[n] = a.State
		}
	}
	return as, err
}

// firing waits until the alert fires on the target, at most limit from
// now (its condition should hold already); a failure says what Prometheus
// saw. The returned phrase, for the report, times it from since (what
// happened then).
func (w *alertWatch) firing(name string, since time.Time, what string, limit time.Duration) string {
	w.e.t.Helper()
	var last []Alert
	var err error
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); {
		last, err = w.poll()
		for _, a := range last {
			if a.Labels["alertname"] == name && a.State == "firing" {
				return fmt.Sprintf("%s%s active %.1f s and firing %s after %s", name, reason(a),
					a.ActiveAt.Sub(since).Seconds(), w.firedAt(name, since), what)
			}
		}
		w.e.sleep(250 * time.Millisecond)
	}
	w.e.t.Errorf("Prometheus: %s did not fire on %s (%s) %.1f s after %s; active there: %s (%v); %s",
		name, w.who, w.inst, time.Since(since).Seconds(), what, describe(last), err, w.says())
	return fmt.Sprintf("%s NOT firing %.1f s after %s", name, time.Since(since).Seconds(), what)
}

// firedAt is when the alert first fired, after since, from the ALERTS
// series Prometheus writes at each evaluation (the API gives only when it
// became active, and the suite may look later).
func (w *alertWatch) firedAt(name string, since time.Time) string {
	span := time.Since(since).Truncate(time.Second) + 2*time.Second
	q := fmt.Sprintf(`min_over_time(timestamp(ALERTS{alertname=%q,instance=%q,alertstate="firing"})[%s:1s])`, name, w.inst, promDur(span))
	vs, err := w.e.prom.Query(w.e.ctx, q)
	var ts float64
	if err == nil && len(vs) > 0 {
		_, err = fmt.Sscan(vs[0].Value, &ts)
	}
	if err != nil || len(vs) == 0 {
		return fmt.Sprintf("(seen at %.1f s)", time.Since(since).Seconds())
	}
	return fmt.Sprintf("%.1f s", time.UnixMilli(int64(ts*1000)).Sub(since).Seconds())
}

// resolved waits until none of names is active on the target, at most
// limit from now.
func (w *alertWatch) resolved(since time.Time, what string, limit time.Duration, names ...string) string {
	w.e.t.Helper()
	var left []Alert
	var err error
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); {
		left, err = w.poll()
		left = slices.DeleteFunc(left, func(a Alert) bool { return !slices.Contains(names, a.Labels["alertname"]) })
		if err == nil && len(left) == 0 {
			return fmt.Sprintf("%s resolved %.1f s after %s", strings.Join(names, " and "), time.Since(since).Seconds(), what)
		}
		w.e.sleep(250 * time.Millisecond)
	}
	w.e.t.Errorf("Prometheus: on %s (%s), %.1f s after %s, still active: %s (%v); %s",
		w.who, w.inst, time.Since(since).Seconds(), what, describe(left), err, w.says())
	return fmt.Sprintf("still active %.1f s after %s: %s", time.Since(since).Seconds(), what, describe(left))
}

// others names the other alerts seen active on the target, for the report.
func (w *alertWatch) others(names ...string) string {
	var out []string
	for _, n := range slices.Sorted(maps.Keys(w.seen)) {
		if !slices.Contains(names, n) {
			out = append(out, n+" "+w.seen[n])
		}
	}
	if len(out) == 0 {
		return "no other alert on it"
	}
	return "also seen on it: " + strings.Join(out, ", ")
}

// scrapes says how many scrapes of the target failed over the last span,
// and the slowest: a failed scrape drops the series, and restarts the `for:`
// of an alert on them.
func (w *alertWatch) scrapes(span time.Duration) string {
	r := promDur(span)
	failed, err1 := w.e.prom.Query(w.e.ctx, fmt.Sprintf(`count_over_time(up{instance="%[1]s"}[%[2]s]) - sum_over_time(up{instance="%[1]s"}[%[2]s])`, w.inst, r))
	total, err2 := w.e.prom.Query(w.e.ctx, fmt.Sprintf(`count_over_time(up{instance="%s"}[%s])`, w.inst, r))
	slow, err3 := w.e.prom.Query(w.e.ctx, fmt.Sprintf(`max_over_time(scrape_duration_seconds{instance="%s"}[%s])`, w.inst, r))
	if err := errors.Join(err1, err2, err3); err != nil || len(failed) != 1 || len(total) != 1 || len(slow) != 1 {
		return fmt.Sprintf("scrapes of the last %s unknown (%v)", r, err)
	}
	return fmt.Sprintf("%s of %s scrapes in the last %s failed, the slowest %s s", failed[0].Value, total[0].Value, r, slow[0].Value)
}

// says is what Prometheus last scraped from the target: up, ready, the
// lease state and lost leases, to tell a rule that did not match from a
// target that was not scraped.
func (w *alertWatch) says() string {
	var parts []string
	for _, q := range []string{
		`up{instance="%s"}`,
		`snowflake_coordinator_ready{instance="%s"}`,
		`snowflake_coordinator_lease_state{instance="%s"} == 1`,
		`snowflake_coordinator_lease_losses_total{instance="%s"} > 0`,
	} {
		q = fmt.Sprintf(q, w.inst)
		vs, err := w.e.prom.Query(w.e.ctx, q)
		if err != nil {
			parts = append(parts, q+": "+err.Error())
			continue
		}
		var s []string
		for _, v := range vs {
			l := v.Metric["state"] + v.Metric["reason"]
			if l != "" {
				l = "{" + l + "}"
			}
			s = append(s, l+" "+v.Value)
		}
		parts = append(parts, fmt.Sprintf("%s: [%s]", strings.Split(q, "{")[0], strings.Join(s, ", ")))
	}
	return "Prometheus has " + strings.Join(parts, "; ") + "; " + w.scrapes(time.Minute)
}

func reason(a Alert) string {
	if r := a.Labels["reason"]; r != "" {
		return "{reason=" + r + "}"
	}
	return ""
}

func describe(as []Alert) string {
	if len(as) == 0 {
		return "none"
	}
	var s []string
	for _, a := range as {
		s = append(s, fmt.Sprintf("%s%s %s since %s", a.Labels["alertname"], reason(a), a.State, a.ActiveAt.Format("15:04:05.0")))
	}
	return strings.Join(s, ", ")
}
