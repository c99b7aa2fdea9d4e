//go:build snippet

package main

import (
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
)

// What the River fragments use without declaring (<!-- snippet: needs
// river -->): the job database's pool and the program's workers.
var (
	pool    *pgxpool.Pool
	workers *river.Workers
)
