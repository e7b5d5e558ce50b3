;;; eglot_driver.el --- drives eglot against agent-assist in `emacs --batch'  -*- lexical-binding: t -*-

;; Loaded by test_eglot.py as `emacs --batch -l eglot_driver.el' in a temporary git project.
;; It loads the README's eglot configuration (AGENT_ASSIST_TEST_README_EL, cut out of
;; README.md as it stands), then does what a user would: visits a tracked file, M-x eglot,
;; M-x agent-assist-chat twice, C-x C-s, types on until Emacs auto-saves, and quits Emacs.
;; What it sees is written as JSON to AGENT_ASSIST_TEST_OUT just before `kill-emacs' (and
;; on any error).
;;
;; Batch Emacs has no command loop: `aa-wait' pumps `read-event' (process output, timers and
;; file notifications are handled there) and runs the idle timers, which batch Emacs never
;; runs, the way an interactive Emacs does while the user waits (eglot sends didChange from
;; one of them).

(require 'cl-lib)
(require 'json)
(require 'subr-x)

(defvar aa-out (getenv "AGENT_ASSIST_TEST_OUT"))
(defvar aa-timeout (string-to-number (or (getenv "AGENT_ASSIST_TEST_TIMEOUT") "120")))
(defvar aa-observed nil "Alist of what was observed, written as a JSON object.")
(defvar aa-received nil "Every message eglot received from the server, newest first.")
(defvar aa-sent nil "Every message eglot sent to the server, newest first.")
(defvar aa-step "start" "What the driver is doing (reported on a timeout or an error).")

(defun aa-note (key value)
  "Record VALUE as KEY of the observations."
  (setf (alist-get key aa-observed) value))

(defun aa-write ()
  "Write the observations and every message seen to `aa-out'."
  (aa-note 'received (vconcat (reverse aa-received)))
  (aa-note 'sent (vconcat (reverse aa-sent)))
  (aa-note 'step aa-step)
  (let ((coding-system-for-write 'utf-8))
    (with-temp-file aa-out
      (insert (json-encode aa-observed)))))

;; -- what goes over the wire, recorded as eglot sees it ---------------------------------

(defun aa--method-name (method)
  "METHOD as a string (jsonrpc takes it as a string, a symbol or a keyword)."
  (cond ((keywordp method) (substring (symbol-name method) 1))
        ((symbolp method) (and method (symbol-name method)))
        (t method)))

(defun aa--message-record (message)
  "Return MESSAGE (a JSON-RPC plist) as an alist `json-encode' writes faithfully."
  (list (cons 'method (aa--method-name (plist-get message :method)))
        (cons 'id (plist-get message :id))
        (cons 'params (plist-get message :params))
        (cons 'result (plist-get message :result))
        (cons 'error (plist-get message :error))))

(advice-add 'jsonrpc-connection-receive :before
            (lambda (_connection message)
              (push (aa--message-record message) aa-received)))

(advice-add 'jsonrpc-connection-send :before
            (lambda (_connection &rest args)
              (push (aa--message-record args) aa-sent)))

(defun aa-received (method)
  "The params of every notification or request METHOD received, oldest first."
  (cl-loop for m in (reverse aa-received)
           when (equal (alist-get 'method m) method)
           collect (alist-get 'params m)))

(defun aa-sent (method)
  "The params of every notification or request METHOD sent, oldest first."
  (cl-loop for m in (reverse aa-sent)
           when (equal (alist-get 'method m) method)
           collect (alist-get 'params m)))

;; -- waiting on events ----------------------------------------------------------------

(defun aa-run-idle-timers (already-run)
  "Run the idle timers not in ALREADY-RUN (a cons whose car lists them); return it."
  (dolist (timer (copy-sequence timer-idle-list))
    (unless (memq timer (car already-run))
      (push timer (car already-run))
      (timer-event-handler timer)))
  already-run)

(defun aa-wait (what predicate &optional seconds)
  "Handle events until PREDICATE returns non-nil (that value); fail after SECONDS.
WHAT names the event in the error."
  (setq aa-step (format "waiting for %s" what))
  (let ((deadline (+ (float-time) (or seconds aa-timeout)))
        (idle (list nil))
        (found nil))
    (while (not (setq found (funcall predicate)))
      (when (> (float-time) deadline)
        (error "Timed out after %ss waiting for %s" (or seconds aa-timeout) what))
      (read-event nil nil 0.05)
      (aa-run-idle-timers idle))
    found))

(defun aa-settle (seconds)
  "Handle events for SECONDS (an idle user), whatever arrives."
  (let ((deadline (+ (float-time) seconds))
        (idle (list nil)))
    (while (< (float-time) deadline)
      (read-event nil nil 0.05)
      (aa-run-idle-timers idle))))

(defun aa-turn-ended (turn)
  "The agentAssist/turnEnded params of TURN once received."
  (cl-find turn (aa-received "agentAssist/turnEnded")
           :key (lambda (p) (plist-get p :turn))))

;; -- the scenario ---------------------------------------------------------------------

(defun aa-buffer-state (buffer)
  (with-current-buffer buffer
    (list (cons 'text (buffer-substring-no-properties (point-min) (point-max)))
          (cons 'modified (if (buffer-modified-p) t :json-false)))))

(defun aa-chat-and-wait (text turn)
  "M-x agent-assist-chat TEXT; return the turnEnded params of TURN."
  (setq aa-step (format "agent-assist-chat %S" text))
  (agent-assist-chat text)
  (aa-wait (format "agentAssist/turnEnded of turn %s" turn)
           (lambda () (aa-turn-ended turn))))

(defun aa-scenario ()
  (let* ((readme-el (getenv "AGENT_ASSIST_TEST_README_EL"))
         (file (expand-file-name (getenv "AGENT_ASSIST_TEST_FILE")))
         (buffer nil)
         (server nil))
    (aa-note 'emacs_pid (emacs-pid))
    (aa-note 'emacs_version emacs-version)
    ;; the user's init.el: the README's snippet, and eglot as Debian's elpa-eglot has it
    (load readme-el nil t)
    (require 'eglot)
    (aa-note 'eglot_library (locate-library "eglot"))
    (setq eglot-confirm-server-initiated-edits nil)
    (setq eglot-connect-timeout (max 30 aa-timeout))  ; a loaded machine starts Python slowly
    ;; The project is under /tmp, where Emacs makes no backup files; a user's is not.
    (setq backup-enable-predicate (lambda (_name) t))
    ;; C-x C-f templates/reply.txt, M-x eglot
    (setq aa-step "find-file")
    (setq buffer (find-file file))
    (auto-save-mode 1)  ; as an interactive Emacs has it (`auto-save-default'); batch has not
    (aa-note 'major_mode (symbol-name major-mode))
    (setq aa-step "M-x eglot")
    (call-interactively #'eglot)
    (aa-wait "eglot to manage the buffer"
             (lambda () (buffer-local-value 'eglot--managed-mode buffer)))
    (setq server (with-current-buffer buffer (eglot-current-server)))
    (aa-note 'server_pid (process-id (jsonrpc--process server)))
    (aa-note 'before (aa-buffer-state buffer))

    ;; 1. a chat whose reply comes as agentAssist/turnEnded; the model writes the file
    (with-current-buffer buffer
      (aa-note 'turn1 (aa-chat-and-wait "please thank them in the reply" 1)))
    (aa-note 'after_write (aa-buffer-state buffer))
    (setq aa-step "turn 1 ended")
    (aa-note 'on_disk_after_write
             (with-temp-buffer (insert-file-contents file) (buffer-string)))

    ;; 2. the user waits a moment (eglot sends didChange when idle), asks again
    (aa-settle 1)
    (with-current-buffer buffer
      (aa-note 'turn2 (aa-chat-and-wait "show me the reply" 2)))

    ;; 3. C-x C-s: didSave, and the file watcher's events
    (setq aa-step "save-buffer")
    (with-current-buffer buffer (save-buffer))
    (aa-note 'saved_disk (with-temp-buffer (insert-file-contents file) (buffer-string)))
    (aa-wait "didChangeWatchedFiles for the saved file"
             (lambda ()
               (cl-some (lambda (params)
                          (cl-some (lambda (change)
                                     (string-suffix-p
                                      (concat "/" (file-name-nondirectory file))
                                      (plist-get change :uri)))
                                   (plist-get params :changes)))
                        (aa-sent "workspace/didChangeWatchedFiles"))))
    (aa-settle 2)  ; whatever else the save set off reaches the server
    (setq aa-step "agentAssist/status")
    (aa-note 'status (jsonrpc-request server :agentAssist/status (make-hash-table)
                                      :timeout aa-timeout))
    (aa-settle 1)  ; a drift notification the status request overtook would arrive now
    (aa-note 'after_save (aa-buffer-state buffer))
    (aa-note 'received_at_status (length aa-received))

    ;; 3b. the user types on, and stops: after `auto-save-timeout' (30 s) idle an interactive
    ;; Emacs writes #reply.txt# beside the file (the command loop does, no timer: do it here)
    (setq aa-step "auto-save")
    (with-current-buffer buffer
      (goto-char (point-max))
      (insert "P.S. We will be in touch.\n"))
    (aa-settle 1)
    (with-current-buffer buffer (do-auto-save t))
    (aa-note 'auto_save_file (with-current-buffer buffer buffer-auto-save-file-name))
    (aa-wait "didChangeWatchedFiles for the auto-save file"
             (lambda ()
               (cl-some (lambda (params)
                          (cl-some (lambda (change)
                                     (string-suffix-p "/%23reply.txt%23" (plist-get change :uri)))
                                   (plist-get params :changes)))
                        (aa-sent "workspace/didChangeWatchedFiles"))))
    (aa-settle 2)
    (aa-note 'status_after_auto_save
             (jsonrpc-request server :agentAssist/status (make-hash-table) :timeout aa-timeout))
    (aa-settle 1)
    (aa-note 'server_stderr
             (with-current-buffer (jsonrpc-stderr-buffer server) (buffer-string)))

    ;; 4. C-x C-c
    (setq aa-step "kill-emacs")
    (aa-note 'done t)
    (aa-note 'sent_before_quit (length aa-sent))
    (aa-write)
    (add-hook 'kill-emacs-hook #'aa-write 100)  ; and again with what quitting sent, if anything
    (kill-emacs 0)))

(condition-case err
    (aa-scenario)
  (error
   (aa-note 'error (format "%s: %s" aa-step (error-message-string err)))
   (aa-write)
   (kill-emacs 1)))

;;; eglot_driver.el ends here
