import type { Mail } from './mailer.service';

/** The mail with the code and the link (D15). Plain text; the code on a line of its own. */
export function signupCodeMail(m: {
  to: string;
  tenantName: string;
  code: string;
  link: string;
  minutes: number;
}): Mail {
  return {
    to: m.to,
    subject: `Your ${m.tenantName} sign-up code: ${m.code}`,
    text: [
      `Your code to create an account at ${m.tenantName} is:`,
      '',
      `    ${m.code}`,
      '',
      'Or open this link to choose your password:',
      m.link,
      '',
      `The code and the link work once and expire in ${m.minutes} minutes.`,
      'If you did not ask for an account, ignore this mail.',
    ].join('\n'),
  };
}

/** The mail to an address that already has an account: no code, no link. */
export function existingAccountMail(m: { to: string; tenantName: string; signInUrl: string }): Mail {
  return {
    to: m.to,
    subject: `You already have a ${m.tenantName} account`,
    text: [
      `Someone, probably you, asked to create an account at ${m.tenantName} with this e-mail address.`,
      'This address already has an account, so no code was issued.',
      '',
      `Sign in at ${m.signInUrl} instead.`,
      'If you did not ask for this, ignore this mail.',
    ].join('\n'),
  };
}
