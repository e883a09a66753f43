package b

import "testing"

func TestNothingSlow(t *testing.T) {}
