package projector

// Observer is told what a projector did, for metrics. Its methods are
// called from the projector's workers, concurrently, and must not block.
type Observer interface {
	// ProjectionApplied counts n events applied to the read model now (not
	// those found done already).
	ProjectionApplied(projection string, n int)
	// ProjectionFailed counts one failed attempt; dead says the event is
	// now dead (given up on).
	ProjectionFailed(projection string, dead bool)
}

// noObserver is the Observer of a projector given none.
type noObserver struct{}

func (noObserver) ProjectionApplied(string, int) {}
func (noObserver) ProjectionFailed(string, bool) {}

// Observe makes o the projector's Observer (Config.Observer), for a
// projector built elsewhere (a configured projection); call it before Run.
func (p *Projector) Observe(o Observer) {
	if o != nil {
		p.cfg.Observer = o
	}
}
