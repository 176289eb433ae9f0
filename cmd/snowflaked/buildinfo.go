package main

import (
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

// revision is the VCS commit, stamped at build time like version
// (-ldflags "-X main.revision=<sha>"); without it the Go toolchain's own
// vcs.revision stamp is used, or "unknown" (a -buildvcs=false build).
var revision = ""

func buildRevision() string {
	if revision != "" {
		return revision
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && s.Value != "" {
				return s.Value
			}
		}
	}
	return "unknown"
}

// newBuildInfo is snowflake_build_info{version,goversion,revision} = 1: a
// dashboard shows which build each worker runs, and a rollout's progress.
func newBuildInfo() prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "snowflake_build_info",
		Help: "1, labelled with the build of this snowflaked: version, Go version, VCS revision.",
		ConstLabels: prometheus.Labels{
			"version": buildVersion(), "goversion": runtime.Version(), "revision": buildRevision(),
		},
	})
	g.Set(1)
	return g
}
