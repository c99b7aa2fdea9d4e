// Package redact removes what logs and telemetry must not hold from the
// text they record.
package redact

import (
	"errors"
	"net/url"
)

// ErrorText returns err's message with the URL of any *url.Error left out:
// that URL keeps the query string (http.Client strips only the password),
// and a query string may carry a token. The operation and the underlying
// error stay, as they say what went wrong. The observers that log or record
// transport errors (slogretry's Observer, otelretry) use it
// instead of err.Error().
func ErrorText(err error) string {
	var ue *url.Error
	if !errors.As(err, &ue) {
		return err.Error()
	}
	op := ue.Op
	for {
		var inner *url.Error
		if ue.Err == nil || !errors.As(ue.Err, &inner) {
			break
		}
		ue = inner
	}
	if ue.Err == nil {
		return op
	}
	return op + ": " + ue.Err.Error()
}
