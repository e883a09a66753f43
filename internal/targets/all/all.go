// Package all links in every kind of --target: each registers itself with targets.Register,
// and its --target form with plan.RegisterTargetForm, when its package is loaded. A new kind is
// one more line here.
package all

import (
	_ "github.com/fsbench/fsbench/internal/targets/boards"  // ssh://HOST/DEV and labgrid:PLACE/DEV: a board
	_ "github.com/fsbench/fsbench/internal/targets/device"  // device:/dev/X: the user's device
	_ "github.com/fsbench/fsbench/internal/targets/image"   // image: a sparse image file (the default)
	_ "github.com/fsbench/fsbench/internal/targets/nandsim" // nandsim: a simulated raw NAND chip
	_ "github.com/fsbench/fsbench/internal/targets/simcard" // simcard:PROFILE: the flash model
	_ "github.com/fsbench/fsbench/internal/targets/vm"      // vm and vm:simcard:PROFILE: a QEMU guest
)
