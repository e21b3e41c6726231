/** Types of scripts/docker-build-check.js for the tests that import it. */
export interface DockerInstruction {
  instruction: string;
  flags: Record<string, string>;
  args: string;
  line: number;
}
export interface DockerStage {
  name: string | undefined;
  steps: DockerInstruction[];
}
export interface CheckedStep {
  line?: number;
  command: string;
}
export interface ImageCheck {
  ran: CheckedStep[];
  skipped: Array<CheckedStep & { reason: string }>;
  workDir: string;
}
export function parseDockerfile(text: string): DockerInstruction[];
export function stagesOf(instructions: DockerInstruction[]): DockerStage[];
export function andParts(command: string): string[];
export function dockerignore(text: string): (relative: string) => boolean;
export function checkImage(options?: {
  root?: string;
  dockerfileText?: string;
  keep?: boolean;
  log?: (line: string) => void;
}): Promise<ImageCheck>;
