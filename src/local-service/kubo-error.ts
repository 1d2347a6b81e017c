/** The paths of Kubo's RPC API (`/api/v0/...`): their errors are answered in Kubo's shape too. */
export function isKuboRpcPath (pathname: string): boolean {
  return pathname.startsWith('/api/v0/')
}

/** go-ipfs-cmds' error codes, as Kubo's clients read them. */
const ERR_NORMAL = 0
const ERR_CLIENT = 1
const ERR_NOT_FOUND = 3
const ERR_FORBIDDEN = 5
const ERR_RATE_LIMITED = 6

function kuboCode (status: number): number {
  if (status === 404) return ERR_NOT_FOUND
  if (status === 401 || status === 403) return ERR_FORBIDDEN
  if (status === 429) return ERR_RATE_LIMITED
  return status >= 400 && status < 500 ? ERR_CLIENT : ERR_NORMAL
}

/**
 * An error body as Kubo's clients read it (`Message`, `Code`, `Type: "error"`: kubo-rpc-client
 * shows `Message`), keeping `error` as this service's own clients and the Lighthouse SDK read it.
 */
export function kuboErrorBody (status: number, message: string, error: unknown): Record<string, unknown> {
  return { Message: message, Code: kuboCode(status), Type: 'error', error }
}
