package oncegrpc

import "errors"

// ErrInvalidConfig is matched by errors.Is for every *ConfigError.
var ErrInvalidConfig = errors.New("oncegrpc: invalid config")

// ConfigError reports a Config, ClientConfig or Keeper that
// ServerInterceptor or ClientInterceptor refuses. No interceptor is
// returned with it, so a misconfigured service fails at start-up rather
// than failing, or running unguarded, call by call.
type ConfigError struct {
	// Field is the field at fault ("Scope", "MaxStoredResponse",
	// "StoreMetadata", "Options", "MaxAttempts", …) or "Keeper".
	Field string
	// Reason says what is wrong.
	Reason string
	// Err is the cause, when there is one: ErrNoScope for a missing
	// Scope, the core's *once.InvalidInputError for an option it refuses.
	Err error
}

// Error names the field and the reason.
func (e *ConfigError) Error() string {
	return "oncegrpc: invalid config: " + e.Field + ": " + e.Reason
}

// Unwrap returns Err.
func (e *ConfigError) Unwrap() error { return e.Err }

// Is reports whether target is ErrInvalidConfig.
func (e *ConfigError) Is(target error) bool { return target == ErrInvalidConfig }
