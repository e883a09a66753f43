package targets

import (
	"context"
	"strings"
	"testing"

	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/session"
)

type capsOnly struct{ caps Capability }

func (c capsOnly) Spec() plan.TargetSpec       { return plan.TargetSpec{Kind: "caps-only"} }
func (c capsOnly) Caps() Capability            { return c.caps }
func (c capsOnly) Check(cfg plan.Config) error { return nil }

type localOnly struct{ capsOnly }

func (localOnly) Prepare(context.Context, *session.Session, plan.Config) (*Prepared, error) {
	return &Prepared{}, nil
}

type remoteOnly struct{ capsOnly }

func (remoteOnly) Run(context.Context, *session.Session, plan.Request) (*results.Run, error) {
	return &results.Run{}, nil
}

// AsLocal and AsRemote hand out a target only when it both declares the capability and has the
// method: a kind that says one and does the other is refused with what it declared.
func TestAsLocalAsRemote(t *testing.T) {
	tests := []struct {
		name          string
		t             Target
		local, remote bool
	}{
		{"local", localOnly{capsOnly{LocalDevice}}, true, false},
		{"remote", remoteOnly{capsOnly{RemoteRunner}}, false, true},
		{"declares local, has no Prepare", remoteOnly{capsOnly{LocalDevice}}, false, false},
		{"has Prepare, declares nothing", localOnly{capsOnly{}}, false, false},
	}
	for _, tt := range tests {
		_, lerr := AsLocal(tt.t)
		_, rerr := AsRemote(tt.t)
		if (lerr == nil) != tt.local || (rerr == nil) != tt.remote {
			t.Errorf("%s: AsLocal %v, AsRemote %v; want local %v, remote %v", tt.name, lerr, rerr, tt.local, tt.remote)
		}
		if lerr != nil && !strings.Contains(lerr.Error(), "capabilities: "+tt.t.Caps().String()) {
			t.Errorf("%s: %v does not say what the target declared", tt.name, lerr)
		}
	}
}

func TestCapabilityString(t *testing.T) {
	if got := (LocalDevice | CardModel | PowerControl).String(); got != "local block device, card model, power control" {
		t.Errorf("String = %q", got)
	}
	if got := Capability(0).String(); got != "none" {
		t.Errorf("String = %q", got)
	}
}

func TestRegistry(t *testing.T) {
	Register("registry-test", func(s plan.TargetSpec, _ Options) (Target, error) { return capsOnly{LocalDevice}, nil })
	tg, err := New(plan.TargetSpec{Kind: "registry-test"}, Options{})
	if err != nil || !tg.Caps().Has(LocalDevice) {
		t.Errorf("New(registry-test) = %v, %v", tg, err)
	}
	if _, err := New(plan.TargetSpec{Kind: "not-registered"}, Options{}); err == nil || !strings.Contains(err.Error(), "registry-test") {
		t.Errorf("New(not-registered) = %v, want an error listing the registered kinds", err)
	}
	defer func() {
		if recover() == nil {
			t.Error("registering a kind twice did not panic")
		}
	}()
	Register("registry-test", nil)
}
