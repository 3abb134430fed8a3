package oncewatermill_test

import (
	"bytes"
	"testing"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/adapters/oncewatermill"
	"github.com/stagedoor/once/backends/memory"
	"github.com/stagedoor/once/consume"
)

// Produced messages over the outcome cap (1 MiB by default) have no durable
// record: the core stores an "outcome too large" error in their place, so a
// redelivery could not republish them. They are never handed to the router;
// the message is dead-lettered on the first run and on every redelivery.
func TestProducedMessagesOverTheCapAreDeadLettered(t *testing.T) {
	scope := once.New(memory.New(nil)).Scope("handler")
	var decisions []consume.Decision
	mw := oncewatermill.Middleware(scope, &oncewatermill.Config{
		Key:        func(m *message.Message) (string, error) { return m.UUID, nil }, // called outside a router: no handler name
		OnDecision: func(_ *message.Message, d consume.Decision) { decisions = append(decisions, d) },
	})
	runs := 0
	h := mw(func(msg *message.Message) ([]*message.Message, error) {
		runs++
		big := bytes.Repeat([]byte("x"), 600<<10)
		return []*message.Message{message.NewMessage("out-1", big), message.NewMessage("out-2", big)}, nil
	})
	for delivery := range 2 {
		produced, err := h(message.NewMessage("in-1", []byte("order 7")))
		require.Error(t, err, "delivery %d", delivery)
		require.True(t, oncewatermill.IsDeadLetter(err), "delivery %d: %v", delivery, err)
		require.ErrorAs(t, err, new(*once.OutcomeTooLargeError))
		require.Empty(t, produced, "delivery %d: produced messages without a durable record", delivery)
		require.Equal(t, consume.ReasonTooLarge, decisions[delivery].Reason)
	}
	require.Equal(t, 1, runs, "the redelivery replays the stored error")

	// With the cap raised, the same output is stored and replayed whole.
	raised := oncewatermill.Middleware(once.New(memory.New(nil), once.WithMaxOutcomeSize(4<<20)).Scope("handler"), &oncewatermill.Config{Key: func(m *message.Message) (string, error) { return m.UUID, nil }})
	h = raised(func(msg *message.Message) ([]*message.Message, error) {
		big := bytes.Repeat([]byte("x"), 600<<10)
		return []*message.Message{message.NewMessage("out-1", big), message.NewMessage("out-2", big)}, nil
	})
	for range 2 {
		produced, err := h(message.NewMessage("in-2", []byte("order 8")))
		require.NoError(t, err)
		require.Len(t, produced, 2)
		require.Equal(t, "out-1", produced[0].UUID)
		require.Len(t, produced[1].Payload, 600<<10)
	}
}
