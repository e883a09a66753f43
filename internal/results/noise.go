package results

// Noise is what else the machine did while a measurement was taken (see measure.Noise, which
// the suite converts into this, so that the file format is results' own).
type Noise struct {
	StealPct       float64 `json:"steal_pct"`
	OtherCPUPct    float64 `json:"other_cpu_pct"`
	OwnCPUPct      float64 `json:"own_cpu_pct,omitempty"`
	CPUPressurePct float64 `json:"cpu_pressure_pct,omitempty"`
	IOPressurePct  float64 `json:"io_pressure_pct,omitempty"`
	MemPressurePct float64 `json:"mem_pressure_pct,omitempty"`
	// The Own pressures are fsbench's own cgroup's: the machine's less these is what only
	// other tasks waited, which is what is judged.
	OwnCPUPressurePct float64 `json:"own_cpu_pressure_pct,omitempty"`
	OwnIOPressurePct  float64 `json:"own_io_pressure_pct,omitempty"`
	OwnMemPressurePct float64 `json:"own_mem_pressure_pct,omitempty"`
	// OtherIOBytes is what whole disks moved less the run's own I/O on them (OwnIOBytes): its
	// partition's on the card, its image's on the disk holding it.
	OtherIOBytes uint64 `json:"other_io_bytes,omitempty"`
	OwnIOBytes   uint64 `json:"own_io_bytes,omitempty"`
	// Busy: the machine was busy enough with other work that the figure is not trusted; Why
	// says with what, in words.
	Busy bool   `json:"busy,omitempty"`
	Why  string `json:"why,omitempty"`
}

// Disturbed reports whether m was measured while the machine was busy with other work.
func (m Measurement) Disturbed() bool { return m.Noise != nil && m.Noise.Busy }

// Sentinel says what the noise sentinel could see on the machine that ran the tests.
type Sentinel struct {
	// Cgroup is fsbench's own cgroup v2, which held it and every process it started: other CPU
	// is the machine's less this cgroup's. Empty: there was none, and other processes were
	// found by scanning /proc (which misses those that live shorter than a test).
	Cgroup string `json:"cgroup,omitempty"`
	// PSI: the kernel reported pressure; OwnPSI: also for fsbench's cgroup.
	PSI    bool `json:"psi"`
	OwnPSI bool `json:"own_psi"`
	// OwnIO lists the disks on which the device's I/O was counted as the run's own, and how
	// ("mmcblk0p2 on mmcblk0 (request for request)").
	OwnIO []string `json:"own_io,omitempty"`
	// Notes say what the sentinel did without what was missing.
	Notes []string `json:"notes,omitempty"`
}
