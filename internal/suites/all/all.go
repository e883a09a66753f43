// Package all loads every suite: importing it registers them (internal/suites). A new suite
// adds one line here.
package all

import (
	_ "github.com/fsbench/fsbench/internal/suites/bonnie"
	_ "github.com/fsbench/fsbench/internal/suites/endurance"
	_ "github.com/fsbench/fsbench/internal/suites/powercut"
	_ "github.com/fsbench/fsbench/internal/suites/randio"
	_ "github.com/fsbench/fsbench/internal/suites/smallfiles"
)
