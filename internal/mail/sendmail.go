package mail

import (
	"context"
	"os"

	gomail "github.com/wneessen/go-mail"

	"github.com/etl-craft/etl-craft/internal/exit"
)

// checkSendmail checks that sendmail_path is a program this process can
// run.
func (s *Sender) checkSendmail() error {
	path := s.settings.SendmailPath
	st, err := os.Stat(path)
	switch {
	case err != nil:
		return exit.Errorf(exit.ConnectionTest, "sendmail at %s does not exist", path)
	case st.IsDir() || st.Mode()&0o111 == 0:
		return exit.Errorf(exit.ConnectionTest, "sendmail at %s is not executable", path)
	}
	return nil
}

// sendmail hands msg to the sendmail program, which reads the recipients
// from its headers (-t). Anything the program writes on stderr, or a
// non-zero exit, is a failure.
func (s *Sender) sendmail(ctx context.Context, msg *gomail.Msg) error {
	if err := s.checkSendmail(); err != nil {
		return err
	}
	if err := msg.WriteToSendmailWithContext(ctx, s.settings.SendmailPath); err != nil {
		return exit.Wrap(exit.Handler, err, "sendmail at %s could not send the email", s.settings.SendmailPath)
	}
	return nil
}
