// Package targets is the contract between the engine (internal/runner) and the kinds of
// --target: a Target says what it can do (Caps: a local block device, a remote runner, the
// user's device, a card model, raw flash, power control), and the engine asks for those, never
// for a kind. A kind that declares LocalDevice implements Local (it prepares a device here); one
// that declares RemoteRunner implements Remote (it hands the run to another fsbench).
//
// Each kind lives in a package of its own under internal/targets/ and registers itself with
// Register when loaded; internal/targets/all loads them all:
//   - image: a sparse image file on a loop device (the default);
//   - simcard: the flash model served as a file by a child process, on a loop device;
//   - device: a real block device, with the checks that refuse one in use;
//   - nandsim: a simulated raw NAND chip;
//   - vm: a QEMU guest that runs the same fsbench;
//   - boards: a board over SSH (ssh://) or a place of a labgrid farm (labgrid:).
//
// What a run owns on the machine (results directory, ledger, cleanup, loop devices, scheduler,
// cgroup) is package session's, which knows no kind; how a board is reached (ssh, labgrid
// client, file packing) is package remote's.
//
// What only a kind's device yields (a simulated card's counters and power cuts, a NAND chip) is
// the kind's own value in Prepared.Extra, which the engine asks for by interfaces it declares
// (internal/runner/kinddata.go): this package imports no kind's domain (deps_test.go).
//
// Adding a kind: a package internal/targets/NAME whose init calls RegisterKind (a type that
// embeds Base) or Register, and plan.RegisterTargetForm (its --target form), and a line in
// internal/targets/all (ARCHITECTURE.md).
package targets
