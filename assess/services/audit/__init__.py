"""The judge audit's services (being split by concern: every name still comes from ``estimates``)."""

from assess.services.audit.estimates import *  # noqa: F403
