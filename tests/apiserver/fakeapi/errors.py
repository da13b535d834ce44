"""API errors as the real kube-apiserver returns them: a v1 Status object and an HTTP code.

Messages and reasons follow k8s.io/apimachinery/pkg/api/errors/errors.go, so a client that
parses them against this server parses them against a real one.
"""


class ApiError(Exception):
    """Raised anywhere in request handling; the HTTP layer turns it into a Status reply."""

    def __init__(self, code, reason, message, details=None, headers=None):
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.headers = headers or {}

    def status(self):
        body = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details is not None:
            body["details"] = self.details
        return body


def _details(rtype, name, **extra):
    d = {}
    if name:
        d["name"] = name
    if rtype is not None:
        if rtype.group:
            d["group"] = rtype.group
        d["kind"] = rtype.plural
    d.update(extra)
    return d


def _qualified(rtype):
    # errors.go prints schema.GroupResource: "persistentvolumes", "leases.coordination.k8s.io"
    return rtype.plural + ("." + rtype.group if rtype.group else "")


def not_found(rtype, name):
    return ApiError(404, "NotFound", '%s "%s" not found' % (_qualified(rtype), name),
                    _details(rtype, name))


def namespace_not_found(name):
    return ApiError(404, "NotFound", 'namespaces "%s" not found' % name,
                    {"name": name, "kind": "namespaces"})


def already_exists(rtype, name):
    return ApiError(409, "AlreadyExists", '%s "%s" already exists' % (_qualified(rtype), name),
                    _details(rtype, name))


def conflict(rtype, name, why):
    return ApiError(409, "Conflict", 'Operation cannot be fulfilled on %s "%s": %s'
                    % (_qualified(rtype), name, why), _details(rtype, name))


STALE_OBJECT = ("the object has been modified; please apply your changes to the latest version "
                "and try again")


def invalid(rtype, name, causes):
    """causes: list of (field, kind, detail) where kind is one of the field.ErrorType words."""
    reasons = {"Invalid value": "FieldValueInvalid", "Required value": "FieldValueRequired",
               "Forbidden": "FieldValueForbidden", "Unsupported value": "FieldValueNotSupported",
               "Duplicate value": "FieldValueDuplicate", "Too long": "FieldValueTooLong"}
    texts = []
    cause_list = []
    for field, kind, detail in causes:
        text = "%s: %s" % (kind, detail) if detail else kind
        texts.append("%s: %s" % (field, text))
        cause_list.append({"reason": reasons.get(kind, "FieldValueInvalid"),
                           "message": text, "field": field})
    joined = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
    details = {"name": name, "kind": rtype.kind, "causes": cause_list}
    if rtype.group:
        details["group"] = rtype.group
    return ApiError(422, "Invalid", '%s "%s" is invalid: %s' % (rtype.kind, name, joined), details)


def forbidden(rtype, name, why):
    return ApiError(403, "Forbidden", '%s "%s" is forbidden: %s' % (_qualified(rtype), name, why),
                    _details(rtype, name))


def bad_request(message):
    return ApiError(400, "BadRequest", message)


def method_not_allowed(message="the server does not allow this method on the requested resource"):
    return ApiError(405, "MethodNotAllowed", message, {})


def unsupported_media_type(content_type):
    return ApiError(415, "UnsupportedMediaType",
                    'the body of the request was in an unknown format - accepted media types '
                    'include: application/json, application/merge-patch+json, '
                    'application/strategic-merge-patch+json, application/json-patch+json '
                    '(got "%s")' % content_type)


def resource_not_found():
    return ApiError(404, "NotFound", "the server could not find the requested resource", {})


def expired(message):
    return ApiError(410, "Expired", message)


def unauthorized():
    return ApiError(401, "Unauthorized", "Unauthorized")


def internal(message):
    return ApiError(500, "InternalError",
                    "Internal error occurred: %s" % message,
                    {"causes": [{"message": message}]})


def too_many_requests(retry_after):
    return ApiError(429, "TooManyRequests",
                    "the server has received too many requests and has asked us to try again later",
                    {"causes": [{"reason": "UnexpectedServerResponse",
                                 "message": "Too many requests, please try again later."}],
                     "retryAfterSeconds": retry_after},
                    headers={"Retry-After": str(retry_after)})
