package results

import (
	"reflect"
	"testing"
)

// TestFileCountsAddEveryField keeps Add in step with the struct: a count added to FileCounts
// and forgotten in Add would be lost from every sum over cuts and recordings.
func TestFileCountsAddEveryField(t *testing.T) {
	var one FileCounts
	v := reflect.ValueOf(&one).Elem()
	for i := range v.NumField() {
		v.Field(i).SetInt(int64(i + 1))
	}
	var sum FileCounts
	sum.Add(one)
	sum.Add(one)
	s := reflect.ValueOf(sum)
	for i := range s.NumField() {
		if got, want := s.Field(i).Int(), int64(2*(i+1)); got != want {
			t.Errorf("after adding %s = %d twice: %d, want %d", s.Type().Field(i).Name, i+1, got, want)
		}
	}
}

// TestPowerCutAddCounts sums two recordings: counts add, maxima are kept, a full stream
// stays noted.
func TestPowerCutAddCounts(t *testing.T) {
	var s PowerCut
	s.AddCounts(&PowerCut{Cuts: 10, Safe: Proportion{Count: 9, Of: 10}, StreamFull: true, RecoveryMaxSeconds: 2,
		FileCounts: FileCounts{AckedLost: 1}})
	s.AddCounts(&PowerCut{Cuts: 5, Safe: Proportion{Count: 5, Of: 5}, RecoveryMaxSeconds: 1,
		FileCounts: FileCounts{AckedLost: 2, ZeroTails: 1}})
	want := PowerCut{Cuts: 15, Safe: Proportion{Count: 14}, StreamFull: true, RecoveryMaxSeconds: 2,
		FileCounts: FileCounts{AckedLost: 3, ZeroTails: 1}}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("sum of two recordings:\n got %+v\nwant %+v", s, want)
	}
}
