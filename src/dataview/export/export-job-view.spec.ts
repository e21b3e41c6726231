import { AppError } from '../../common/errors/app-error';
import type { Job } from '../../jobs/job.types';
import { exportJobView, exportOutcome } from './export-job-view';

const PUBLIC_ID = 'q3v0cXlS1i8aQ3kE0nqKJw';
const JOB: Job = {
  id: 42,
  publicId: PUBLIC_ID,
  tenantId: '1',
  kind: 'dataview.export',
  status: 'RUNNING',
  createdBy: 1,
  requestId: 'r',
  input: { dataviewCode: 'customers_grid', body: { format: 'pdf' } },
  processed: 4000,
  total: 10000,
  result: null,
  error: null,
  attempts: 1,
  createdAt: Date.UTC(2026, 0, 5),
  startedAt: Date.UTC(2026, 0, 5),
  updatedAt: Date.UTC(2026, 0, 5),
  finishedAt: null,
};
const DONE = { filename: 'customers_2026-01-05.pdf', downloadUrl: `/api/v1/downloads/${'a'.repeat(43)}` };

describe('export job answers', () => {
  it('should show a running job by its public id, with its progress and where to ask again', () => {
    expect(exportJobView(JOB)).toEqual({
      jobId: PUBLIC_ID,
      status: 'RUNNING',
      dataviewCode: 'customers_grid',
      format: 'pdf',
      processed: 4000,
      total: 10000,
      createdAt: '2026-01-05T00:00:00.000Z',
      finishedAt: null,
      statusUrl: `/api/v1/exports/${PUBLIC_ID}`,
    });
  });

  it('should add the download to a completed job and the error to a failed one, never both', () => {
    const completed = { ...JOB, status: 'COMPLETED' as const, result: DONE, finishedAt: JOB.createdAt };
    expect(exportJobView(completed)).toMatchObject(DONE);
    const error = { code: 'FORBIDDEN', message: 'Missing permission export:dataview' };
    const failed = exportJobView({ ...JOB, status: 'FAILED', result: DONE, error });
    expect(failed.error).toEqual(error);
    expect(failed.downloadUrl).toBeUndefined();
  });

  it('should answer the route as before for a finished job: the file, the error, or 409 when cancelled', () => {
    expect(exportOutcome({ ...JOB, status: 'COMPLETED', result: DONE })).toEqual(DONE);
    const thrown = (job: Job): AppError => {
      try {
        exportOutcome(job);
      } catch (err) {
        return err as AppError;
      }
      throw new Error('expected an error');
    };
    const failed = thrown({
      ...JOB,
      status: 'FAILED',
      error: { code: 'VALIDATION_ERROR', message: 'm', details: [1] },
    });
    expect([failed.code, failed.message, failed.details]).toEqual(['VALIDATION_ERROR', 'm', [1]]);
    expect(thrown({ ...JOB, status: 'FAILED', error: { code: 'NO_SUCH_CODE', message: 'x' } }).code).toBe(
      'SERVICE_ERROR',
    );
    expect(thrown({ ...JOB, status: 'CANCELLED' }).code).toBe('CONFLICT');
  });

  it('should never give the row key to a client: a job without a public id is no answer', () => {
    expect(() => exportJobView({ ...JOB, publicId: null })).toThrow('has no public id');
  });
});
