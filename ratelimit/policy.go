package ratelimit

import "fmt"

// answer is what a call gets under the failure policy.
type answer[T any] struct {
	v  T
	by Store // the store that decided; nil when FailOpen answered
	// storeErr is the store's failure when the policy answered for it
	// (FailOpen, FailLocal), nil when the store decided.
	storeErr error
}

// underPolicy runs do on the store and, when the store fails, applies the
// failure policy, the one place that does: FailClosed returns the store's
// error, wrapping ErrStore; FailOpen answers open; FailLocal runs do on
// Options.Local and, when that fails too, returns one error that wraps
// ErrStore and both failures ("<store's>; local: <local's>"). Every
// failure the policy answers is reported to Options.OnStoreError.
func underPolicy[T any](l *Limiter, open T, do func(Store) (T, error)) (answer[T], error) {
	v, err := do(l.store)
	if err == nil {
		return answer[T]{v: v, by: l.store}, nil
	}
	serr := fmt.Errorf("%w: %w", ErrStore, err)
	switch l.failure {
	case FailOpen:
		l.report(serr)
		return answer[T]{v: open, storeErr: serr}, nil
	case FailLocal:
		l.report(serr)
		lv, lerr := do(l.local)
		if lerr != nil {
			return answer[T]{}, fmt.Errorf("%w; local: %w", serr, lerr)
		}
		return answer[T]{v: lv, by: l.local, storeErr: serr}, nil
	}
	return answer[T]{}, serr
}

func (l *Limiter) report(err error) {
	if l.onErr != nil {
		l.onErr(err)
	}
}
