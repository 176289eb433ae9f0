package worker

import (
	"strconv"
	"time"

	"github.com/snowfleet/snowfleet/coordinator"
	"github.com/snowfleet/snowfleet/worker/resp"
)

// Status is the worker's snapshot for /status: the lease's status and the
// server's own. Its Ready is /readyz's verdict, true exactly when /readyz
// answers 200; Serving is the lease's, whether it may issue IDs. They differ
// while shutting down: from BeginShutdown (the --shutdown-delay) the worker
// is not ready, so that balancers drop it, yet goes on serving.
type Status struct {
	coordinator.Status
	Serving          bool      `json:"serving"`
	Version          string    `json:"version"`
	Listen           string    `json:"listen"`
	Advertise        string    `json:"advertise"`
	Connections      int64     `json:"connections"`
	ConnectionsTotal int64     `json:"connections_total"`
	Draining         bool      `json:"draining"`
	Started          time.Time `json:"started"`
}

// Status is a snapshot of the lease and the server.
func (s *Server) Status() Status {
	r := s.lease.Readiness()
	st := Status{
		Status:           s.lease.Status(),
		Serving:          r.Ready(),
		Version:          s.cfg.Version,
		Listen:           s.cfg.Listen,
		Advertise:        s.cfg.Advertise,
		Connections:      s.open.Load(),
		ConnectionsTotal: s.accepted.Load(),
		Draining:         s.draining.Load(),
		Started:          s.started,
	}
	_, st.Ready = s.readyLine(r)
	return st
}

// infoText is INFO's bulk string: "key:value" lines under "# Snowflake",
// the format redis-cli and Redis tooling parse.
func (s *Server) infoText() []byte {
	st := s.Status()
	b := make([]byte, 0, 768)
	line := func(k, v string) {
		b = append(b, k...)
		b = append(b, ':')
		b = resp.AppendClean(b, v)
		b = append(b, '\r', '\n')
	}
	num := func(k string, v int64) { line(k, strconv.FormatInt(v, 10)) }
	b = append(b, "# Snowflake\r\n"...)
	line("snowflake_version", st.Version)
	line("state", st.State)
	line("slot", st.Slot)
	flag := func(k string, v bool) {
		n := int64(0)
		if v {
			n = 1
		}
		num(k, n)
	}
	flag("ready", st.Ready)
	flag("serving", st.Serving)
	line("lease_node", st.LeaseNode)
	num("floor_ms", st.FloorMs)
	num("ceiling_ms", st.CeilingMs)
	num("last_issued_ms", st.LastIssuedMs)
	num("issued", int64(st.Issued))
	num("skew_ms", st.SkewMs)
	num("lead_ms", st.LeadMs)
	num("logical_issued", int64(st.LogicalIssued))
	num("zk_mtime_ms", st.ZKMtimeMs)
	line("session_id", "0x"+strconv.FormatInt(st.SessionID, 16))
	num("claims", st.Claims)
	num("lease_creates", st.Creates)
	num("losses", st.Losses)
	line("state_since", st.Since.UTC().Format(time.RFC3339Nano))
	num("connections", st.Connections)
	num("connections_total", st.ConnectionsTotal)
	line("listen", st.Listen)
	line("advertise", st.Advertise)
	num("uptime_in_seconds", int64(time.Since(s.started).Seconds()))
	flag("draining", st.Draining)
	return b
}
