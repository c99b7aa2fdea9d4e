//go:build snippet

package main

import (
	twilioapi "github.com/twilio/twilio-go/rest/api/v2010"
)

// What the twilio-go fragments use without declaring (//snippet:needs
// twilio): a message's parameters and the id of the job that sends it.
var (
	params *twilioapi.CreateMessageParams
	id     string
)
