// Command peers measures once.Do beside the raw driver and DBOS Transact
// on PostgreSQL and Redis (package peers). Run it from bench/peers:
//
//	go run ./cmd/peers -rounds 5 -duration 1s > ../results/peers.md
package main

import "github.com/stagedoor/once/bench/peers"

func main() { peers.Main() }
