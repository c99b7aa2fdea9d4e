package limiter

import _ "embed"

// decideLua takes one rate decision; see the comments at its top.
//
//go:embed decide.lua
var decideLua string

// cooldownLua pauses a boundary; see the comments at its top.
//
//go:embed cooldown.lua
var cooldownLua string
