package backends

import "errors"

// ErrTxRolledBack is matched (errors.Is) by the error of a store bound to
// a transaction when the server rolled the whole transaction back to break
// a deadlock or a serialization conflict. once.DoTx then begins the
// transaction again if fn has not run yet.
var ErrTxRolledBack = errors.New("once: transaction rolled back by the server")
