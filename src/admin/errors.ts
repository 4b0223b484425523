// What the admin API refuses, with the HTTP status that says why.
export class AdminError extends Error {
  constructor(readonly status: 400 | 401 | 403 | 404 | 409, message: string) {
    super(message);
  }
}
