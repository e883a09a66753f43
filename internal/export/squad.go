package export

import (
	"encoding/json"
	"io"

	"github.com/fsbench/fsbench/internal/results"
)

// squadMetric is one SQUAD metric as its submission API takes it (the "metrics" file of
// POST /api/submit/GROUP/PROJECT/BUILD/ENVIRONMENT): its measurements (SQUAD keeps them all and
// shows their mean) and its unit.
type squadMetric struct {
	Value []float64 `json:"value"`
	Unit  string    `json:"unit,omitempty"`
}

// SQUADMetrics writes r's figures as SQUAD metrics (JSON) to w: one metric per cell,
// "fsbench-VARIANT/TEST", whose measurements are the repetitions' figures, with its unit, and
// one per secondary figure, "fsbench-VARIANT/TEST-NAME". SQUAD names a metric SUITE/NAME: each
// variant is a suite. It returns how many metrics it wrote; cells that measured nothing have
// none (SQUAD's tests file says pass and fail, which these figures are not).
func SQUADMetrics(w io.Writer, r *results.Run) (int, error) {
	out := map[string]squadMetric{}
	for _, c := range Cells(r) {
		if len(c.Values) == 0 {
			continue
		}
		suite := "fsbench-" + pathPart(c.Variant)
		out[suite+"/"+pathPart(c.Test)] = squadMetric{Value: c.Values, Unit: c.Unit}
		for _, x := range c.Extra {
			out[suite+"/"+pathPart(c.Test)+"-"+x.Name] = squadMetric{Value: x.Values, Unit: x.Unit}
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return len(out), enc.Encode(out)
}

// SQUADMetadata is the metadata file of the same submission: the run's id as SQUAD's job_id
// (a second submission of the same run is refused as a duplicate), and where it ran.
func SQUADMetadata(w io.Writer, r *results.Run) error {
	md := map[string]any{"job_id": RunID(r), "datetime": r.Started.UTC().Format("2006-01-02T15:04:05Z"),
		"kernel_release": r.Machine.Kernel, "arch": r.Machine.Arch, "fsbench_version": r.Tool.Version}
	if r.Remote != nil {
		md["board"] = r.Remote.Hostname
		md["board_model"] = r.Remote.Model
	}
	return json.NewEncoder(w).Encode(md)
}
