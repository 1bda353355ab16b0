package bench

import (
	"errors"
	"fmt"
)

// Error is a bench failure that knows its cause and its fix. Error() names
// the object and what happened; rig prints Cause() and Fix() as their own
// lines (any error with these two methods, found with errors.As).
type Error struct {
	Object string // what failed: "port net_ring0", "EAL", "--lcores 0-3"
	Err    error  // what happened
	cause  string // why, when more is known than Err says; else Err
	fix    string
}

func (e *Error) Error() string {
	if e.Object == "" {
		return "bench: " + e.Err.Error()
	}
	return "bench: " + e.Object + ": " + e.Err.Error()
}

// Unwrap returns what happened (errors.Is(err, syscall.ENOMEM) and the like).
func (e *Error) Unwrap() error { return e.Err }

// Cause says why it happened.
func (e *Error) Cause() string {
	if e.cause != "" {
		return e.cause
	}
	return e.Err.Error()
}

// Fix says what to do about it.
func (e *Error) Fix() string { return e.fix }

// failure builds an Error; cause may be empty (then Err is the cause).
func failure(object string, err error, cause, fix string) *Error {
	return &Error{Object: object, Err: err, cause: cause, fix: fix}
}

// failuref is failure with a formatted what-happened and no separate cause.
func failuref(object, fix, format string, args ...any) *Error {
	return &Error{Object: object, Err: fmt.Errorf(format, args...), fix: fix}
}

// NewError is an Error for callers outside bench (rig's flags): object,
// what happened, why (may be empty) and the fix.
func NewError(object string, err error, cause, fix string) *Error {
	return failure(object, err, cause, fix)
}

// ErrorWithFix is err's text with its cause (when it says more) and fix.
func ErrorWithFix(err error) string {
	s := err.Error()
	var be *Error
	if errors.As(err, &be) {
		if be.cause != "" {
			s += "; cause: " + be.cause
		}
		if be.fix != "" {
			s += "; fix: " + be.fix
		}
	}
	return s
}
