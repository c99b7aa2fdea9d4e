package riverjobs_test

import (
	"errors"
	"testing"

	"github.com/riverqueue/river/rivertype"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/riverjobs"
)

func TestActionOf(t *testing.T) {
	job := func(args string, unique []byte) *rivertype.JobRow {
		return &rivertype.JobRow{ID: 7, Attempt: 3, Kind: "payment", EncodedArgs: []byte(args), UniqueKey: unique}
	}
	tests := []struct {
		name string
		cfg  riverjobs.Config
		job  *rivertype.JobRow
		want retrybudget.Action
		err  error
	}{
		{name: "fields", cfg: riverjobs.Config{TenantField: "tenant", KeyField: "order"},
			job: job(`{"tenant":"acme","order":"o-1"}`, nil), want: retrybudget.Action{Tenant: "acme", Operation: "payment", Key: "o-1"}},
		{name: "number key and nested tenant", cfg: riverjobs.Config{TenantField: "account.id", KeyField: "order"},
			job: job(`{"account":{"id":"t1"},"order":12345678901234567890}`, nil), want: retrybudget.Action{Tenant: "t1", Operation: "payment", Key: "12345678901234567890"}},
		{name: "operation field", cfg: riverjobs.Config{OperationField: "op", KeyField: "order"},
			job: job(`{"op":"refund","order":"o-1"}`, nil), want: retrybudget.Action{Operation: "refund", Key: "o-1"}},
		{name: "unique key", cfg: riverjobs.Config{TenantField: "tenant"},
			job: job(`{"tenant":"acme"}`, []byte{0xab, 0xcd}), want: retrybudget.Action{Tenant: "acme", Operation: "payment", Key: "river:abcd"}},
		{name: "field wins over unique key", cfg: riverjobs.Config{KeyField: "order"},
			job: job(`{"order":"o-1"}`, []byte{1}), want: retrybudget.Action{Operation: "payment", Key: "o-1"}},
		{name: "no key", cfg: riverjobs.Config{KeyField: "order"}, job: job(`{"order":null}`, nil), err: riverjobs.ErrNoActionKey},
		{name: "zero config, not unique", job: job(`{}`, nil), err: riverjobs.ErrNoActionKey},
		{name: "tenant field absent", cfg: riverjobs.Config{TenantField: "tenant", KeyField: "order"},
			job: job(`{"order":"o-1"}`, nil), err: riverjobs.ErrNoTenant},
		{name: "tenant field empty", cfg: riverjobs.Config{TenantField: "tenant", KeyField: "order"},
			job: job(`{"tenant":"","order":"o-1"}`, nil), err: riverjobs.ErrNoTenant},
		{name: "tenant field null, unique key", cfg: riverjobs.Config{TenantField: "tenant"},
			job: job(`{"tenant":null}`, []byte{1}), err: riverjobs.ErrNoTenant},
		{name: "args not an object", cfg: riverjobs.Config{KeyField: "order"}, job: job(`[1]`, nil), err: riverjobs.ErrBadArgs},
		{name: "key is an object", cfg: riverjobs.Config{KeyField: "order"}, job: job(`{"order":{"a":1}}`, nil), err: riverjobs.ErrBadArgs},
		{name: "path through a string", cfg: riverjobs.Config{KeyField: "order.id"}, job: job(`{"order":"x"}`, nil), err: riverjobs.ErrBadArgs},
		{name: "Action func", cfg: riverjobs.Config{Action: func(j *rivertype.JobRow) (retrybudget.Action, error) {
			return retrybudget.Action{Tenant: "x", Operation: j.Kind, Key: "k"}, nil
		}}, job: job(`{}`, nil), want: retrybudget.Action{Tenant: "x", Operation: "payment", Key: "k"}},
		{name: "Action func without key", cfg: riverjobs.Config{Action: func(*rivertype.JobRow) (retrybudget.Action, error) {
			return retrybudget.Action{}, nil
		}}, job: job(`{}`, nil), err: riverjobs.ErrNoActionKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := riverjobs.ActionOf(tt.cfg, tt.job)
			if !errors.Is(err, tt.err) {
				t.Fatalf("err = %v; want %v", err, tt.err)
			}
			if tt.err == nil && got != tt.want {
				t.Errorf("ActionOf = %+v; want %+v", got, tt.want)
			}
		})
	}
}

// The attempt number never enters the Action: every run of a job carries
// the same idempotency key.
func TestActionOfIgnoresAttempt(t *testing.T) {
	cfg := riverjobs.Config{KeyField: "order"}
	first := &rivertype.JobRow{Kind: "payment", Attempt: 1, EncodedArgs: []byte(`{"order":"o"}`)}
	later := &rivertype.JobRow{Kind: "payment", Attempt: 9, EncodedArgs: []byte(`{"order":"o"}`)}
	a, _ := riverjobs.ActionOf(cfg, first)
	b, _ := riverjobs.ActionOf(cfg, later)
	if a.IdempotencyKey() != b.IdempotencyKey() {
		t.Errorf("keys differ across attempts: %s, %s", a.IdempotencyKey(), b.IdempotencyKey())
	}
}
