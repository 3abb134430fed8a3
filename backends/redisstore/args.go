package redisstore

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// rawArg is a command argument that go-redis writes as its bytes, through
// encoding.BinaryMarshaler. Boxed as a pointer into the command's []any it
// costs no allocation of its own, where a []byte, a string or an int64
// above 255 each cost one: so the hot commands' arguments live in one
// allocation with the command itself (claimArgs, completeArgs). Only
// arguments after the key are rawArgs: go-redis reads the command name and
// the key as strings (routing on a Cluster, hooks).
type rawArg struct{ b []byte }

func (a *rawArg) MarshalBinary() ([]byte, error) { return a.b, nil }

// String is what hooks that format a command's arguments (tracing,
// logging) print: the bytes, as go-redis prints a []byte argument.
func (a *rawArg) String() string { return string(a.b) }

// MarshalJSON encodes the bytes as encoding/json encodes a []byte argument
// (base64), for hooks that log a command's arguments as JSON.
func (a *rawArg) MarshalJSON() ([]byte, error) { return json.Marshal(a.b) }

// claimArgs are a claim's commands and their arguments, in one
// allocation besides the key's boxing: the pipeline
//
//	PTTL key
//	SET key <pending record> NX PX life GET
//
// or, while the Store creates first (see Claim), the SET alone without its
// GET, which then goes to the pipeline when it finds a record (full).
// The pending record is written into buf (room for a 36-byte owner token,
// a 64-byte fingerprint and two 13-digit offsets; longer ones allocate).
type claimArgs struct {
	set         [7]any
	ttl         [2]any
	value, life rawArg
	ttlCmd      redis.IntCmd
	setCmd      redis.StringCmd
	buf         [144]byte
	digits      [20]byte
}

// createArgs is how many of the SET's arguments the create alone sends:
// all but its GET.
const createArgs = 6

func newClaimArgs(ctx context.Context, key, owner string, fp []byte, life, leaseTail int64, alone bool) *claimArgs {
	a := &claimArgs{}
	k := any(key)
	a.value.b = appendPending(a.buf[:0], owner, fp, life, leaseTail)
	a.life.b = strconv.AppendInt(a.digits[:0], life, 10)
	a.set = [7]any{"set", k, &a.value, "nx", "px", &a.life, "get"}
	a.ttl = [2]any{"pttl", k}
	a.ttlCmd = *redis.NewIntCmd(ctx, a.ttl[:]...)
	if alone {
		a.setCmd = *redis.NewStringCmd(ctx, a.set[:createArgs]...)
	} else {
		a.setCmd = *redis.NewStringCmd(ctx, a.set[:]...)
	}
	return a
}

// full makes the SET the pipeline's, with its GET, after the create alone
// found a record.
func (a *claimArgs) full(ctx context.Context) {
	a.setCmd = *redis.NewStringCmd(ctx, a.set[:]...)
}

// completeArgs is complete.lua's EVALSHA and its arguments, in one
// allocation besides the key's and the owner's boxing:
//
//	EVALSHA <sha> 2 key steps-key owner outcome retention-ms notify
//
// The checkpoints key (the record's key followed by stepsSuffix) is
// written into stepsBuf (room for a 122-byte record key; a longer one
// allocates).
type completeArgs struct {
	args                      [9]any
	steps, outcome, retention rawArg
	cmd                       redis.Cmd
	digits                    [20]byte
	stepsBuf                  [128]byte
}

// completeSHA is complete.lua's SHA-1, boxed once: boxing the string on
// every completion would cost an allocation.
var completeSHA any = completeScript.Hash()

func newCompleteArgs(ctx context.Context, key, owner string, outcome []byte, retention int64, notify any) *completeArgs {
	a := &completeArgs{}
	a.steps.b = append(append(a.stepsBuf[:0], key...), stepsSuffix...)
	a.outcome.b = outcome
	a.retention.b = strconv.AppendInt(a.digits[:0], retention, 10)
	a.args = [9]any{"evalsha", completeSHA, 2, key, &a.steps, owner, &a.outcome, &a.retention, notify}
	a.cmd = *redis.NewCmd(ctx, a.args[:]...)
	a.cmd.SetFirstKeyPos(3)
	return a
}
