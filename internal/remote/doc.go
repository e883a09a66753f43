// Package remote is how fsbench reaches a board: ssh.go (the user's OpenSSH client, one
// invocation per command; a board's facts; the tar stream results come back in), labgrid.go
// (labgrid-client: acquire, release, show and power a place; wait for a board's SSH server;
// release a killed run's places for session's cleanup) and labgridshow.go (the parser of
// `labgrid-client show`, whose resources are Python literals). The board kinds
// (internal/targets/boards) run on it.
package remote
