package riverjobs

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/riverqueue/river/rivertype"

	"github.com/retrybudget/retrybudget"
)

// ErrNoActionKey means a job named no action key: its args lack the field
// Config.KeyField names (or it is empty), and the job was inserted without
// River's unique options. Such a job cannot be replayed safely, so it is
// cancelled rather than sent under a key that a second run would not share.
var ErrNoActionKey = errors.New("riverjobs: job names no action key (set Config.KeyField or insert it with UniqueOpts)")

// ErrNoTenant means Config.TenantField is set but a job's args lack that
// field or hold it empty. Such a job is cancelled: run under the tenant ""
// it would share one ledger namespace with every other job missing the
// field, and could be answered with another tenant's stored outcome.
var ErrNoTenant = errors.New("riverjobs: job names no tenant (its args lack Config.TenantField or hold it empty)")

// ErrBadArgs means a field Config names could not be read from a job's
// args: the args are not a JSON object, or the field is not a string or
// number.
var ErrBadArgs = errors.New("riverjobs: cannot read action field from job args")

// ActionOf derives the retrybudget.Action of job as cfg says: the tenant
// from cfg.TenantField, the operation from cfg.OperationField or else the
// job's kind, and the key from cfg.KeyField or else River's unique key.
// River's attempt number never enters it: every run of a job, the first, a
// retry, or a run after its worker died, is the same Action, so the ledger
// replays a completed one instead of sending it again.
func ActionOf(cfg Config, job *rivertype.JobRow) (retrybudget.Action, error) {
	if cfg.Action != nil {
		a, err := cfg.Action(job)
		if err == nil && a.Key == "" {
			err = ErrNoActionKey
		}
		return a, err
	}
	fields := [...]string{cfg.TenantField, cfg.OperationField, cfg.KeyField}
	var vals [3]string
	if fields[0] != "" || fields[1] != "" || fields[2] != "" {
		var args map[string]json.RawMessage
		if err := json.Unmarshal(job.EncodedArgs, &args); err != nil {
			return retrybudget.Action{}, fmt.Errorf("%w: %v", ErrBadArgs, err)
		}
		for i, f := range fields {
			if f == "" {
				continue
			}
			v, err := field(args, f)
			if err != nil {
				return retrybudget.Action{}, err
			}
			vals[i] = v
		}
	}
	if cfg.TenantField != "" && vals[0] == "" {
		return retrybudget.Action{}, fmt.Errorf("%w: field %q", ErrNoTenant, cfg.TenantField)
	}
	a := retrybudget.Action{Tenant: vals[0], Operation: vals[1], Key: vals[2]}
	if a.Operation == "" {
		a.Operation = job.Kind
	}
	if a.Key == "" && len(job.UniqueKey) > 0 {
		// River's unique key hashes the kind and the unique options (args,
		// period, queue): the same for every run of one logical job.
		a.Key = "river:" + hex.EncodeToString(job.UniqueKey)
	}
	if a.Key == "" {
		return a, ErrNoActionKey
	}
	return a, nil
}

// field reads the named field, a dot-separated path into nested objects,
// as a string: a JSON string as is, a number as written.
func field(args map[string]json.RawMessage, path string) (string, error) {
	names := strings.Split(path, ".")
	for i, name := range names {
		raw, ok := args[name]
		if !ok || bytes.Equal(raw, []byte("null")) {
			return "", nil // absent: the caller decides whether that is fatal
		}
		if i < len(names)-1 {
			args = nil
			if err := json.Unmarshal(raw, &args); err != nil {
				return "", fmt.Errorf("%w: %q is not an object", ErrBadArgs, strings.Join(names[:i+1], "."))
			}
			continue
		}
		var s string
		if err := json.Unmarshal(raw, &s); err == nil {
			return s, nil
		}
		var n json.Number
		if err := json.Unmarshal(raw, &n); err == nil {
			return n.String(), nil
		}
		return "", fmt.Errorf("%w: %q is neither a string nor a number", ErrBadArgs, path)
	}
	return "", nil
}
