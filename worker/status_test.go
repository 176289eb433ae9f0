package worker

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/snowfleet/snowfleet/coordinator"
)

// readyView is what the three places that say "ready" say: /readyz's code,
// /status's ready and serving, INFO's ready and serving lines.
type readyView struct {
	readyz                   int
	statusReady, statusServe bool
	infoReady, infoServe     string
}

func (w *testWorker) readyView(t *testing.T) readyView {
	t.Helper()
	get := func(path string) (int, []byte) {
		t.Helper()
		resp, err := http.Get(w.admin.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	var v readyView
	v.readyz, _ = get("/readyz")
	code, body := get("/status")
	var st struct {
		Ready   *bool `json:"ready"`
		Serving *bool `json:"serving"`
	}
	if err := json.Unmarshal(body, &st); code != 200 || err != nil || st.Ready == nil || st.Serving == nil {
		t.Fatalf("/status = %d %s: %v; want ready and serving", code, body, err)
	}
	v.statusReady, v.statusServe = *st.Ready, *st.Serving
	info, err := w.client().Info(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(info, "\r\n") {
		if k, val, ok := strings.Cut(l, ":"); ok && k == "ready" {
			v.infoReady = val
		} else if ok && k == "serving" {
			v.infoServe = val
		}
	}
	return v
}

// TestReadyIsReadyz: /status's and INFO's ready say what /readyz says, and
// serving says whether the lease may issue (#25 item 7). Held: both. During
// the shutdown delay (BeginShutdown): not ready, /readyz 503, yet serving,
// and IDs are still issued. No lease: neither.
func TestReadyIsReadyz(t *testing.T) {
	w := startFake(t, nil)
	if v, want := w.readyView(t), (readyView{200, true, true, "1", "1"}); v != want {
		t.Fatalf("held: %+v, want %+v", v, want)
	}
	w.srv.BeginShutdown()
	if v, want := w.readyView(t), (readyView{503, false, true, "0", "1"}); v != want {
		t.Fatalf("during the shutdown delay: %+v, want %+v", v, want)
	}
	if err := w.client().Do(context.Background(), "NEXTID").Err(); err != nil {
		t.Fatalf("NEXTID during the shutdown delay: %v", err)
	}

	n := serve(t, noLease{newFakeLease(t)}, prometheus.NewRegistry(), nil, nil)
	if v, want := n.readyView(t), (readyView{503, false, false, "0", "0"}); v != want {
		t.Fatalf("no lease: %+v, want %+v", v, want)
	}
}

// noLease is a fakeLease whose lease was lost: nothing may be issued.
type noLease struct{ *fakeLease }

func (noLease) Ready() bool { return false }

func (f noLease) Readiness() coordinator.Readiness {
	r := f.fakeLease.Readiness()
	r.Reason, r.State, r.Slot = coordinator.ReasonNoLease, coordinator.StateClaiming, ""
	return r
}

func (f noLease) Status() coordinator.Status {
	st := f.fakeLease.Status()
	st.Ready, st.State, st.Slot = false, coordinator.StateClaiming, ""
	return st
}
