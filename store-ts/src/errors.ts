/** The Store's one error type, with a stable `code` and the HTTP status it maps to. */

/** Each code and the status it is answered with. */
export const STATUS: Record<string, number> = {
  NotFound: 404,
  BadRequest: 400,
  Conflict: 409,
  TooManyRequests: 429,
  Unauthorized: 401,
  Forbidden: 403,
  Unavailable: 503,
  TimeoutError: 504,
  NetworkError: 502,
  UnknownError: 500,
};

export interface StoreErrorJSON {
  code: string;
  status: number | null;
  message: string;
  param: string | null;
  error: unknown;
}

/**
 * A refusal or failure of the Store: `code` is one of {@link STATUS}, `status` the HTTP
 * status, `param` the argument or field at fault when there is one, `error` the detail.
 */
export class StoreError extends Error {
  readonly code: string;
  readonly status: number | null;
  readonly param: string | null;
  readonly error: unknown;

  constructor(
    code: string,
    message: string,
    options: { status?: number | null; param?: string | null; error?: unknown } = {},
  ) {
    super(message);
    this.name = "StoreError";
    this.code = code;
    this.status = options.status ?? STATUS[code] ?? null;
    this.param = options.param ?? null;
    this.error = options.error ?? null;
  }

  toJSON(): StoreErrorJSON {
    return {
      code: this.code,
      status: this.status,
      message: this.message,
      param: this.param,
      error: this.error,
    };
  }
}

/** The error a gateway's answer holds (its envelope's `code`, else one for its status). */
export async function errorOf(response: Response): Promise<StoreError> {
  const text = await response.text();
  let code: unknown;
  let message: string = text;
  let param: unknown = null;
  try {
    const error = JSON.parse(text).error;
    code = error.code;
    message = typeof error.message === "string" ? error.message : text;
    param = error.param;
  } catch {
    code = undefined;
  }
  if (typeof code !== "string" || !(code in STATUS)) {
    const byStatus = Object.entries(STATUS).find(([, status]) => status === response.status);
    code = byStatus ? byStatus[0] : "UnknownError";
  }
  return new StoreError(code as string, message, {
    status: response.status,
    param: typeof param === "string" ? param : null,
    error: text.slice(0, 500),
  });
}

/** A fetch that failed before any answer: a timeout or a network error. */
export function transportError(error: unknown): StoreError {
  const detail = error instanceof Error ? error : new Error(String(error));
  const timedOut = detail.name === "TimeoutError" || detail.name === "AbortError";
  const cause = (detail as { cause?: unknown }).cause;
  const text = detail.message + (cause instanceof Error ? `: ${cause.message}` : "");
  return new StoreError(timedOut ? "TimeoutError" : "NetworkError", text || "network error", {
    error: String(error),
  });
}
