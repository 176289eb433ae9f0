package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHealth(t *testing.T) {
	ready := true
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" && r.URL.Path != "/healthz" {
			http.NotFound(w, r)
			return
		}
		if !ready && r.URL.Path == "/readyz" {
			http.Error(w, "not ready: standby", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ok\n"))
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")

	for _, tc := range []struct {
		name   string
		ready  bool
		args   []string
		rc     int
		stdout string
		stderr string
	}{
		{"ready", true, []string{"--http", addr}, exitOK, "200 OK ok", ""},
		{"ready quiet", true, []string{"-q", "--http", addr}, exitOK, "", ""},
		{"not ready", false, []string{"--http", addr}, exitFailure, "", "503 Service Unavailable not ready: standby"},
		{"alive though not ready", false, []string{"--http", addr, "--path", "/healthz"}, exitOK, "200 OK", ""},
		{"nobody listening", true, []string{"--http", "127.0.0.1:1", "--timeout", "500ms"}, exitFailure, "", "127.0.0.1:1"},
		{"bad path", true, []string{"--path", "readyz"}, exitUsage, "", "--path must start with /"},
		{"bad timeout", true, []string{"--timeout", "0s"}, exitUsage, "", "--timeout must be positive"},
		{"stray argument", true, []string{addr}, exitUsage, "", "unexpected argument"},
		{"help", true, []string{"-h"}, exitOK, "usage: snowflakectl health", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ready = tc.ready
			var out, errb bytes.Buffer
			rc := runHealth(tc.args, &out, &errb)
			if rc != tc.rc {
				t.Errorf("exit %d, want %d (stdout %q, stderr %q)", rc, tc.rc, out.String(), errb.String())
			}
			if tc.stdout == "" && tc.name == "ready quiet" && out.Len() > 0 {
				t.Errorf("-q printed %q", out.String())
			}
			if !strings.Contains(out.String(), tc.stdout) {
				t.Errorf("stdout %q, want it to contain %q", out.String(), tc.stdout)
			}
			if !strings.Contains(errb.String(), tc.stderr) {
				t.Errorf("stderr %q, want it to contain %q", errb.String(), tc.stderr)
			}
		})
	}
}
