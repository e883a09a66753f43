package targets

// Resumer is a target whose interrupted run a rerun with the same results directory takes up
// where it stopped (a live power-cut campaign on a board, whose cuts take hours): the runner
// lets such a rerun into the directory that holds it, without --force.
type Resumer interface {
	// Resumes reports whether dir holds a run of this target's that it resumes.
	Resumes(dir string) bool
}
