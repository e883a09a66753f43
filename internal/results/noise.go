package results

// Noise is what else the machine did while a measurement was taken (see measure.Noise, which
// the suite converts into this, so that the file format is results' own).
type Noise struct {
	StealPct       float64 `json:"steal_pct"`
	OtherCPUPct    float64 `json:"other_cpu_pct"`
	CPUPressurePct float64 `json:"cpu_pressure_pct,omitempty"`
	IOPressurePct  float64 `json:"io_pressure_pct,omitempty"`
	MemPressurePct float64 `json:"mem_pressure_pct,omitempty"`
	OtherIOBytes   uint64  `json:"other_io_bytes,omitempty"`
	// Busy: the machine was busy enough with other work that the figure is not trusted; Why
	// says with what, in words.
	Busy bool   `json:"busy,omitempty"`
	Why  string `json:"why,omitempty"`
}

// Disturbed reports whether m was measured while the machine was busy with other work.
func (m Measurement) Disturbed() bool { return m.Noise != nil && m.Noise.Busy }
