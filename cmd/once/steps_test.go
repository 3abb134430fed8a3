package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/internal/checkpoints"
	"github.com/stagedoor/once/internal/envelope"
)

// steps: an intent checkpoints a value and a final error, then fails
// retryably; get shows the kept record's checkpoints, and still shows them
// beside the outcome once a retry completes the intent.
func steps(t *testing.T, store backends.Store, flags func(...string) []string) {
	ctx := context.Background()
	scope := once.New(store).Scope("shop")
	declined := once.Final(errors.New("card declined"))
	unreachable := errors.New("provider unreachable")
	fn := func(fail bool) func(context.Context) (order, error) {
		return func(ctx context.Context) (order, error) {
			reserved, err := once.Step(ctx, "reserve", func(context.Context) (order, error) { return order{ID: 3, Status: "reserved"}, nil })
			if err != nil {
				return order{}, err
			}
			_, err = once.Step(ctx, "charge", func(context.Context) (string, error) { return "", declined })
			if err == nil || fail {
				return order{}, unreachable
			}
			return reserved, nil
		}
	}
	_, err := once.Do(ctx, scope, "o1", testFP, fn(true))
	require.ErrorIs(t, err, unreachable)

	v := getJSON(t, flags(), "shop", "o1")
	assert.Equal(t, "pending", v.State, "kept for its checkpoints")
	require.Len(t, v.Steps, 2, "%+v", v)
	assert.Equal(t, "reserve", v.Steps[0].Name)
	assert.Equal(t, "done", v.Steps[0].State)
	assert.Equal(t, "value", v.Steps[0].OutcomeKind)
	assert.JSONEq(t, `{"id":3,"status":"reserved"}`, string(v.Steps[0].Outcome))
	assert.Equal(t, "charge", v.Steps[1].Name)
	assert.Equal(t, "error", v.Steps[1].OutcomeKind)
	assert.JSONEq(t, `{"message":"card declined"}`, string(v.Steps[1].Outcome))
	text := mustRun(t, flags("get", "shop", "o1")...)
	for _, want := range []string{"steps:       2 checkpointed", "  reserve: done,", "bytes, value", `"status": "reserved"`, "  charge: done,", "bytes, final error", `"message": "card declined"`} {
		assert.Contains(t, text, want)
	}

	got, err := once.Do(ctx, scope, "o1", testFP, fn(false))
	require.NoError(t, err)
	assert.Equal(t, order{ID: 3, Status: "reserved"}, got)
	v = getJSON(t, flags(), "shop", "o1")
	assert.Equal(t, "completed", v.State)
	assert.JSONEq(t, `{"id":3,"status":"reserved"}`, string(v.Outcome))
	assert.Len(t, v.Steps, 2, "a completed record keeps its checkpoints")
}

// TestStepViews: every form of checkpoint, and checkpoints that do not
// parse, in --json and in text.
func TestStepViews(t *testing.T) {
	blob := checkpoints.Encode([]checkpoints.Step{
		{Name: "reserve", State: checkpoints.Done, Outcome: envelope.Value([]byte(`{"id":1}`))},
		{Name: "charge", State: checkpoints.Done, Outcome: envelope.Error("card_declined", "declined", nil, 0)},
		{Name: "raw", State: checkpoints.Done, Outcome: envelope.Value([]byte{0xff, 0})},
		{Name: "ship\x1b[2J", State: checkpoints.Started},
	})
	rec := backends.Record{State: backends.StatePending, LeaseRemaining: time.Minute, ExpiresIn: time.Hour, Steps: blob}
	v := newRecordView("s", "k", rec)
	out, err := json.Marshal(v)
	require.NoError(t, err)
	assert.JSONEq(t, `[
		{"name":"reserve","state":"done","outcome_size":10,"outcome_kind":"value","outcome":{"id":1}},
		{"name":"charge","state":"done","outcome_size":`+jsonInt(len(envelope.Error("card_declined", "declined", nil, 0)))+`,"outcome_kind":"error","outcome":{"code":"card_declined","message":"declined"}},
		{"name":"raw","state":"done","outcome_size":4,"outcome_kind":"value","outcome_raw":"/wA="},
		{"name":"ship\u001b[2J","state":"started"}]`, string(mustField(t, out, "steps")))

	text := strings.Join(v.text(), "\n")
	assert.Contains(t, text, "steps:       4 checkpointed")
	assert.Contains(t, text, "  reserve: done, 10 bytes, value")
	assert.Contains(t, text, `    {`+"\n"+`      "id": 1`+"\n"+`    }`)
	assert.Contains(t, text, `      "code": "card_declined",`)
	assert.Contains(t, text, "    (not JSON; 2 bytes from a custom codec; use --json for base64)")
	assert.Contains(t, text, `  "ship\x1b[2J": started, not finished`)

	rec.Steps = []byte{0xee, 1, 2}
	v = newRecordView("s", "k", rec)
	assert.Nil(t, v.Steps)
	assert.Equal(t, rec.Steps, v.StepsRaw)
	assert.Contains(t, strings.Join(v.text(), "\n"), "steps:       3 bytes, undecodable (not written by this version of once)")

	rec.Steps = nil
	v = newRecordView("s", "k", rec)
	out, err = json.Marshal(v)
	require.NoError(t, err)
	assert.NotContains(t, string(out), "steps")
	for _, line := range v.text() {
		assert.NotContains(t, line, "steps")
	}
}

func jsonInt(n int) string { b, _ := json.Marshal(n); return string(b) }

func mustField(t *testing.T, obj []byte, name string) json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(obj, &m))
	require.Contains(t, m, name, "%s", obj)
	return m[name]
}
