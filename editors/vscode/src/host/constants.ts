/** What this extension names itself; the wire contract's names and codes are in `./protocol`. */

/** This extension's id; its README explains how to install the server. */
export const EXTENSION_ID = "agent-assist.agent-assist";

/** Sessions listed at once (newest first): a project may have thousands; search finds the rest. */
export const SESSION_PAGE = 200;
