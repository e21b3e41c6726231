import { errorMessage } from '../common/errors/error-message';
import { Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import type * as Nodemailer from 'nodemailer';
import { AppError } from '../common/errors/app-error';
import type { AppConfig } from '../config/config.schema';
import { InjectConfig } from '../config/inject-config.decorator';
import { lazyModule } from '../common/lazy-module';

// eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded when the first mail is sent
const nodemailer = lazyModule<typeof Nodemailer>(() => require('nodemailer'));

/** SMTP from SMTP_URL, with timeouts short enough that a dead server fails a request, not hangs it. */
function smtpTransport(url: string) {
  return nodemailer().createTransport({
    url,
    connectionTimeout: 10_000,
    greetingTimeout: 10_000,
    socketTimeout: 30_000,
  });
}

export interface Mail {
  to: string;
  subject: string;
  text: string;
}

/**
 * Outgoing mail (D15): SMTP through nodemailer when SMTP_URL is set. Without it, development and
 * test write the mail to the log instead, and production refuses (500) rather than pretend.
 */
@Injectable()
export class MailerService implements OnApplicationShutdown {
  private readonly logger = new Logger('Mailer');
  private readonly transport: ReturnType<typeof smtpTransport> | undefined;

  constructor(@InjectConfig() private readonly config: AppConfig) {
    this.transport = config.smtpUrl ? smtpTransport(config.smtpUrl) : undefined;
  }

  /** Sends one plain-text mail; SERVICE_ERROR when it cannot be handed to the SMTP server. */
  async send(mail: Mail): Promise<void> {
    if (!this.transport) {
      if (this.config.isProduction) {
        this.logger.error(
          { to: mail.to, subject: mail.subject },
          'Mail is not configured: set SMTP_URL; the mail was not sent',
        );
        throw new AppError('SERVICE_ERROR', 'Mail is not configured');
      }
      // Development and test only: the mail, code and link included, goes to the log.
      this.logger.log(
        { event: 'mail_logged', to: mail.to, subject: mail.subject, text: mail.text },
        'Mail not sent (SMTP_URL is not set); logged instead',
      );
      return;
    }
    try {
      await this.transport.sendMail({ from: this.config.mailFrom, ...mail });
    } catch (err) {
      this.logger.error(
        { to: mail.to, subject: mail.subject, err: errorMessage(err) },
        'Mail could not be sent',
      );
      throw new AppError('SERVICE_ERROR', 'Mail could not be sent; try again later');
    }
  }

  onApplicationShutdown(): void {
    this.transport?.close();
  }
}
