package results

// Remote says that a run was carried out on a board reached over SSH, and which board.
type Remote struct {
	// Target is the --target the host gave (ssh://root@board/dev/mmcblk0p3).
	Target   string `json:"target"`
	Hostname string `json:"hostname"`
	// Model and Compatible are the board's device tree model and the SoC's compatible strings.
	Model         string   `json:"model,omitempty"`
	Compatible    []string `json:"compatible,omitempty"`
	Arch          string   `json:"arch"`
	KernelRelease string   `json:"kernel_release"`
	OS            string   `json:"os,omitempty"`
	// Place is the labgrid place the board was acquired as (--target labgrid:PLACE), and
	// Address how it was reached (the place's NetworkService, as an ssh:// target).
	Place   string `json:"place,omitempty"`
	Address string `json:"address,omitempty"`
	// RunDir is where the run lived on the board.
	RunDir string `json:"run_dir,omitempty"`
}
