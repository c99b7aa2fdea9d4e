package goopenai_test

import (
	"context"
	"net/http"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/retrybudget/retrybudget/integrations/fakes"
	"github.com/retrybudget/retrybudget/integrations/goopenai"
	"github.com/retrybudget/retrybudget/integrations/internal/sdktest"
	"github.com/retrybudget/retrybudget/presets"
)

// sdk is go-openai under test; it makes no retries of its own.
var sdk = sdktest.SDK{Name: "go-openai", Fake: fakes.OpenAI, Preset: presets.OpenAI, Call: call}

// call creates one chat completion through go-openai.
func call(ctx context.Context, url string, rt http.RoundTripper, _ bool) error {
	c := goopenai.NewClient("sk-test", url+"/v1", rt)
	_, err := c.CreateChatCompletion(ctx, openai.ChatCompletionRequest{
		Model:    openai.GPT4oMini,
		Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: "hi"}},
	})
	return err
}

func TestCaptureOutcomeWaitTooLong(t *testing.T) { sdktest.CaptureOutcomeWaitTooLong(t, sdk) }
func TestCapturedNext(t *testing.T)              { sdktest.CapturedNext(t, sdk) }
func TestNoKeyHeaderWhereNoneIsDocumented(t *testing.T) {
	sdktest.NoKeyHeaderWhereNoneIsDocumented(t, sdk)
}
func TestJobRunTwiceOneEffect(t *testing.T)       { sdktest.JobRunTwiceOneEffect(t, sdk) }
func TestOutageOneCallArrivals(t *testing.T)      { sdktest.OutageOneCallArrivals(t, sdk) }
func TestOutageFleetAmplification(t *testing.T)   { sdktest.OutageFleetAmplification(t, sdk) }
func TestWorkerKilledAfterTheEffect(t *testing.T) { sdktest.WorkerKilledAfterTheEffect(t, sdk) }
func TestSDKWorkerChild(t *testing.T)             { sdktest.WorkerChild(t, sdk) }
