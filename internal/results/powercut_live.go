package results

// LivePowerCut is what only a live power-cut campaign has: the power of a real board (or an
// emulated one) switched off while the workload ran on its card, the board booted again and
// the filesystem checked there (docs/powercut.md, "Boards and relays"). Its cuts are real, so
// the card's power-loss behaviour is not known: a broken promise cannot be charged to the
// filesystem or the card, and PowerCut's card-damage figures stay empty.
type LivePowerCut struct {
	// Switch is what cut the power: "labgrid place PLACE" or "power commands".
	Switch string `json:"switch"`
	// Lost are the cuts after which the board did not come back, even after a second power
	// cycle: not checked, and not in PowerCut.Cuts. Recycled are the checked cuts after which
	// the board came back only after a second power cycle.
	Lost     int `json:"lost,omitempty"`
	Recycled int `json:"recycled,omitempty"`
	// InFlight are the cuts at which an operation that acknowledges had started and its
	// acknowledgement had not reached the host: it may have landed or not. AcksHeard are the
	// acknowledgements the host received over all the cuts; an acknowledgement the board gave
	// and the host did not receive counts as not given.
	InFlight  int `json:"in_flight"`
	AcksHeard int `json:"acks_heard"`
	// BrokenCuts are the cuts that broke a promise (acknowledged data lost, a deletion undone,
	// an atomic replace torn), whoever's fault: PowerCut.FSBrokenCuts cannot be told.
	BrokenCuts int `json:"broken_cuts"`
	// Remade counts the times the filesystem was made again because a cut left it
	// unrecoverable: the next cuts started on a fresh filesystem.
	Remade int `json:"remade,omitempty"`
	// WorkloadP50Seconds is the median time from the workload's start to the cut;
	// BootP50Seconds the median time from power on to the board's SSH server answering.
	WorkloadP50Seconds float64 `json:"workload_p50_s"`
	BootP50Seconds     float64 `json:"boot_p50_s"`
	// CutsPerHour is the campaign's pace on this board: its boot time sets it.
	CutsPerHour float64 `json:"cuts_per_hour"`
	// Resumed counts the times the campaign was stopped and taken up again.
	Resumed int `json:"resumed,omitempty"`
}

// addLive adds p's live counts to s's, as AddCounts does for the rest.
func addLive(s, p *LivePowerCut) *LivePowerCut {
	if p == nil {
		return s
	}
	if s == nil {
		s = &LivePowerCut{Switch: p.Switch}
	}
	s.Lost += p.Lost
	s.Recycled += p.Recycled
	s.InFlight += p.InFlight
	s.BrokenCuts += p.BrokenCuts
	s.AcksHeard += p.AcksHeard
	s.Remade += p.Remade
	s.Resumed += p.Resumed
	return s
}
