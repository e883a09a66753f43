package powercut

import "context"

// Card is a simulated card that records what it receives and builds the card as it is after a
// power cut (the simulated-card target implements it; package session owns the loop devices).
type Card interface {
	// Record copies the card and records every request after it, up to limit bytes of
	// written data, in a directory on the host's disk (outside the device under test) that it
	// returns; Close removes it.
	Record(limit uint64) (dir string, err error)
	// Pos is the card's request position: how many requests it has recorded.
	Pos() (uint64, error)
	// Stop ends the recording.
	Stop() error
	// Cut builds the card after a cut (cuts in ascending position), with the merge-loss
	// fault added to the profile's model when mergeLoss is set.
	Cut(c Cut, mergeLoss bool) (Outcome, error)
	// Reset forgets what was written to the cut since it was built.
	Reset() error
	// Attach attaches a loop device to the cut; detach undoes it.
	Attach(ctx context.Context) (dev string, detach func() error, err error)
	// Close releases the recording and the cut and removes the recording's directory.
	Close() error
}
