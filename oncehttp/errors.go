package oncehttp

import (
	"errors"
	"net/http"
)

// ErrInvalidConfig is matched by errors.Is for every *ConfigError.
var ErrInvalidConfig = errors.New("oncehttp: invalid config")

// ConfigError reports a Config (or Keeper) that New refuses. No Middleware
// is returned with it, so a misconfigured service fails at start-up rather
// than serving unguarded requests.
type ConfigError struct {
	// Field is the Config field at fault ("Scope", "MaxStoredBody", …) or
	// "Keeper".
	Field string
	// Reason says what is wrong.
	Reason string
}

// Error names the field and the reason.
func (e *ConfigError) Error() string {
	return "oncehttp: invalid config: " + e.Field + ": " + e.Reason
}

// Is reports whether target is ErrInvalidConfig.
func (e *ConfigError) Is(target error) bool { return target == ErrInvalidConfig }

// ScopeError lets Config.Scope choose the status of its refusal. When the
// error Scope returns is or wraps a *ScopeError with a 4xx Status, that
// status is sent (403 for a principal that may not use the route, for
// example); any other error gets 401. Err is never sent to the client.
type ScopeError struct {
	// Status is the HTTP status to answer with, 400 to 499.
	Status int
	// Err is the underlying reason, for logs and errors.Is.
	Err error
}

// Error includes Err's text; it is for logs and never sent to the client.
func (e *ScopeError) Error() string {
	msg := "oncehttp: scope refused (" + http.StatusText(e.status()) + ")"
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns Err.
func (e *ScopeError) Unwrap() error { return e.Err }

func (e *ScopeError) status() int {
	if e.Status >= 400 && e.Status <= 499 {
		return e.Status
	}
	return http.StatusUnauthorized
}

// scopeStatus returns the status to answer a Scope error with.
func scopeStatus(err error) int {
	var se *ScopeError
	if errors.As(err, &se) {
		return se.status()
	}
	return http.StatusUnauthorized
}
