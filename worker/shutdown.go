package worker

// BeginShutdown turns /readyz to 503 at once while the ID service goes on
// answering: the first step of a graceful stop, so that endpoint controllers
// and balancers drop this worker before it stops accepting. Shutdown, the
// drain, comes after the caller's delay. Idempotent.
func (s *Server) BeginShutdown() { s.leaving.Store(true) }

// Leaving reports whether BeginShutdown (or Shutdown) was called.
func (s *Server) Leaving() bool { return s.leaving.Load() || s.draining.Load() }
