package results

// Endurance is one card run to its end by the endurance suite: a workload's day repeated,
// round after round, on one variant's filesystem, until the card failed.
type Endurance struct {
	// Workload is the day repeated; Card the card (a profile, or the device), Behaviour what
	// its profile says it does at its end, Scale its endurance scale and Seed the seed of its
	// blocks' endurances (simulated cards).
	Workload  string  `json:"workload"`
	Card      string  `json:"card"`
	Behaviour string  `json:"behaviour,omitempty"`
	Scale     float64 `json:"scale,omitempty"`
	Seed      uint64  `json:"seed,omitempty"`
	// Rounds is how many rounds completed; DayBytes the bytes a round wrote through the
	// filesystem, on average.
	Rounds   int     `json:"rounds"`
	DayBytes float64 `json:"day_bytes"`
	// The milestones: the first error the host saw (an I/O error or wrong data, whichever came
	// first: the headline), the first I/O error, the card turning read-only, the first wrong
	// data the verifier caught, the filesystem remounting itself read-only, and the end (the
	// last round, with why in End.What).
	FirstError Milestone `json:"first_error"`
	IOError    Milestone `json:"io_error"`
	ReadOnly   Milestone `json:"read_only"`
	WrongData  Milestone `json:"wrong_data"`
	FSReadOnly Milestone `json:"fs_read_only"`
	End        Milestone `json:"end"`
	// BadBlocks are the rounds the card's bad blocks reached 10, 25 and 50 % of its spare
	// blocks (simulated cards, or a card that reports them); SpareBlocks how many it had.
	BadBlocks   []Milestone `json:"bad_blocks,omitempty"`
	SpareBlocks uint64      `json:"spare_blocks,omitempty"`
	// PredictedRounds is the rounds to the first error the wear line predicts for this card at
	// its scale: the median over its first rounds (PredictedEach, one each) of the round's
	// day_lifetime_years on the card's profile (the wear line's figure, from the round's write
	// tests run as one day) × 365.25 × Scale. PredictedYears is that lifetime at scale 1;
	// PredictedFrom says which measurements it comes from.
	PredictedRounds float64   `json:"predicted_rounds,omitempty"`
	PredictedEach   []float64 `json:"predicted_each,omitempty"`
	PredictedYears  float64   `json:"predicted_years,omitempty"`
	PredictedFrom   string    `json:"predicted_from,omitempty"`
	// What the filesystem did: operations that failed with an I/O error; promised files it
	// refused to read (it noticed the damage), lost, or gave back wrong without a warning
	// (the verifier caught it); its own error and checksum-failure counters at the end (-1:
	// it keeps none).
	IOErrors int `json:"io_errors,omitempty"`
	// Unmountable: the filesystem refused to mount what the card gave back (not an I/O error:
	// it found its own metadata wrong).
	Unmountable bool     `json:"unmountable,omitempty"`
	Unreadable  int      `json:"unreadable,omitempty"`
	Missing     int      `json:"missing,omitempty"`
	Wrong       int      `json:"wrong,omitempty"`
	FSErrors    int64    `json:"fs_errors"`
	Corruption  int64    `json:"corruption"`
	Problems    []string `json:"problems,omitempty"`
	// SpeedFirst and SpeedLast are the first and last complete rounds' write rates (MB/s
	// through the filesystem): how fast the card still was.
	SpeedFirst float64 `json:"speed_first_mbps,omitempty"`
	SpeedLast  float64 `json:"speed_last_mbps,omitempty"`
	// Series is the card round by round.
	Series []EndurancePoint `json:"series,omitempty"`
	// Resumed counts the times the card's run went on from its saved state (a run killed,
	// a reboot, a reader plugged back in).
	Resumed int `json:"resumed,omitempty"`
}

// Milestone is when something happened to a card: its round (fractional when the card says
// where in the round it happened: the share of the round's bytes written by then) and what
// had been written through the filesystem and to the device by then. Round 0: not reached.
type Milestone struct {
	Round       float64 `json:"round,omitempty"`
	Bytes       uint64  `json:"bytes,omitempty"`
	DeviceBytes uint64  `json:"device_bytes,omitempty"`
	What        string  `json:"what,omitempty"`
}

// Reached reports whether the milestone was reached.
func (m Milestone) Reached() bool { return m.Round > 0 }

// EndurancePoint is one round of a card.
type EndurancePoint struct {
	Round int    `json:"round"`
	Bytes uint64 `json:"bytes"`
	// CardBytes is what the simulated card had received by the round's end, since it was put in.
	CardBytes uint64  `json:"card_bytes,omitempty"`
	Seconds   float64 `json:"seconds"`
	MBps      float64 `json:"mbps"`
	BadBlocks uint64  `json:"bad_blocks"`
	SpareLeft uint64  `json:"spare_left"`
	Health    string  `json:"health,omitempty"`
}
