package doctor

import (
	"context"
	"time"

	"github.com/etl-craft/etl-craft/internal/alert"
	"github.com/etl-craft/etl-craft/internal/notify"
)

// channelWait is how long one channel's checks may take: a channel that
// takes longer is not answering.
const channelWait = 30 * time.Second

// channels checks each channel of Notifications as notify.Check does: its
// secrets resolve to a usable URL, DNS, TLS, and a dry request where the
// kind allows one. No check shows a URL's path or query, nor a secret.
func (d *doctor) channels(ctx context.Context) {
	n := d.cfg.Notifications
	if n.ConsoleURL != "" {
		d.add(OK, "Console link", "alerts link to their run's page in the console, such as %s for run 42", alert.RunPage(n.ConsoleURL, 42))
	}
	notifier := notify.New(n, d.cfg.Secret)
	for _, c := range n.Channels {
		ctx, cancel := context.WithTimeout(ctx, channelWait)
		detail, err := notifier.Check(ctx, c.Name)
		cancel()
		if err != nil {
			d.add(Fail, "Channel "+c.Name, "%v", err)
			continue
		}
		d.add(OK, "Channel "+c.Name, "%s", detail)
	}
}
