package sqlitestore

import (
	"context"
	"sync"
)

// watchers signals the changes this Store makes to a record to the
// goroutines that wait for them. It sees the writes of this Store only —
// which, for the one process the store is made for, is every write.
type watchers struct {
	mu     sync.Mutex
	closed bool
	m      map[watchKey]map[*watch]struct{}
}

type watchKey struct{ scope, key string }

type watch struct{ ch chan struct{} }

// Watch implements backends.Watcher in process: the channel is closed after
// this Store completes, releases, resolves, deletes or takes over the
// record of (scope, key), or when the Store is closed. It costs a map entry;
// no goroutine, no connection.
func (s *Store) Watch(ctx context.Context, scope, key string) (<-chan struct{}, func(), error) {
	if err := checkNames("watch", scope, key); err != nil {
		return nil, nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, interpretError("watch", err)
	}
	return s.watch.add(watchKey{scope, key})
}

func (w *watchers) add(k watchKey) (<-chan struct{}, func(), error) {
	wt := &watch{ch: make(chan struct{})}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		close(wt.ch)
		return wt.ch, func() {}, nil
	}
	if w.m == nil {
		w.m = make(map[watchKey]map[*watch]struct{})
	}
	set := w.m[k]
	if set == nil {
		set = make(map[*watch]struct{})
		w.m[k] = set
	}
	set[wt] = struct{}{}
	stop := func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if set, ok := w.m[k]; ok {
			delete(set, wt)
			if len(set) == 0 {
				delete(w.m, k)
			}
		}
	}
	return wt.ch, stop, nil
}

// notify wakes every watcher of (scope, key).
func (w *watchers) notify(scope, key string) {
	k := watchKey{scope, key}
	w.mu.Lock()
	defer w.mu.Unlock()
	for wt := range w.m[k] {
		close(wt.ch)
	}
	delete(w.m, k)
}

// closeAll wakes every watcher; later Watch calls return a closed channel.
func (w *watchers) closeAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	for _, set := range w.m {
		for wt := range set {
			close(wt.ch)
		}
	}
	w.m = nil
}
