import { Logger } from '@nestjs/common';
import { AppError } from '../common/errors/app-error';
import { loadConfig } from '../config/config.schema';
import { MailerService } from './mailer.service';

const SECRETS = { JWT_SECRET: 'x'.repeat(40), TENANT_ENCRYPTION_KEY: 'ab'.repeat(32) };
const MAIL = { to: 'someone@example.test', subject: 'Your code', text: 'Code: 123456' };

describe(MailerService.name, () => {
  afterEach(() => jest.restoreAllMocks());

  describe('without SMTP_URL', () => {
    it('should write the mail to the log in development and test', async () => {
      const log = jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
      for (const NODE_ENV of ['development', 'test']) {
        const mailer = new MailerService(loadConfig({ ...SECRETS, NODE_ENV }));
        await expect(mailer.send(MAIL)).resolves.toBeUndefined();
      }
      expect(log).toHaveBeenCalledTimes(2);
      expect(log).toHaveBeenCalledWith(expect.objectContaining(MAIL), expect.any(String));
    });

    it('should refuse with 500 SERVICE_ERROR and log an error in production', async () => {
      const error = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
      const mailer = new MailerService(
        loadConfig({ ...SECRETS, NODE_ENV: 'production', SEED_DEMO: 'false' }),
      );
      const sent = mailer.send(MAIL);
      await expect(sent).rejects.toBeInstanceOf(AppError);
      await expect(sent).rejects.toMatchObject({ code: 'SERVICE_ERROR', message: 'Mail is not configured' });
      expect(error).toHaveBeenCalledTimes(1);
    });
  });

  it('should answer 500 SERVICE_ERROR when the SMTP server cannot be reached', async () => {
    jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    // Port 9 (discard) on loopback: nothing listens, the connection is refused at once.
    const mailer = new MailerService(loadConfig({ ...SECRETS, SMTP_URL: 'smtp://127.0.0.1:9' }));
    await expect(mailer.send(MAIL)).rejects.toMatchObject({ code: 'SERVICE_ERROR' });
    mailer.onApplicationShutdown();
  });
});
