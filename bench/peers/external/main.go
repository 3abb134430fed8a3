//go:build ignore

// Command peers-run is bench/peers' command with two more peers,
// idemlease and go-idempotency, whose code the module proxy refuses and
// this repository does not hold. build.sh builds it in a scratch
// directory outside the repository (bench/README.md, "Peers"); the build
// tag keeps every go command run in this repository away from these
// files.
package main

import "github.com/stagedoor/once/bench/peers"

func main() { peers.Main(idemleasePeer, faustbrianPeer) }
