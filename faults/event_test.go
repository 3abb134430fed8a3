package faults

import (
	"encoding/json"
	"io"
	"sync"
)

// event is one line a worker writes to stdout: the driver's log of what
// happened in the worker.
type event struct {
	// Ev is "ack" (Do returned an answer to the client), "fault" (a
	// failpoint fired), "err" (Do returned an error; the key is retried)
	// or "done".
	Ev     string `json:"ev"`
	Key    string `json:"key,omitempty"`
	Value  string `json:"value,omitempty"`
	Worker string `json:"worker,omitempty"`
	Pid    int    `json:"pid,omitempty"`
	// Point and Action describe a fault; Kind classifies an error.
	Point    string `json:"point,omitempty"`
	Action   string `json:"action,omitempty"`
	Kind     string `json:"kind,omitempty"`
	Replayed bool   `json:"replayed,omitempty"`
	// Verdict marks an "ack" of a reconciler: its Resolve of the key
	// applied, with Value.
	Verdict bool `json:"verdict,omitempty"`
	// Left is the number of keys a worker had not acknowledged when it
	// stopped ("done").
	Left int `json:"left,omitempty"`
}

// lineWriter writes events as JSON lines; one write per event, so a line
// written before a SIGKILL is whole.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) emit(e event) {
	b, _ := json.Marshal(e)
	b = append(b, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = l.w.Write(b)
}
