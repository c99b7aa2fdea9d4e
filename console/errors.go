package console

import "errors"

// ErrConfig is wrapped by New's error for an incomplete Config.
var ErrConfig = errors.New("console: invalid config")
